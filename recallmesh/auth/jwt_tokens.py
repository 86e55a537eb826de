"""JWT bearer tokens verified against a JSON Web Key Set (JWKS).

A token is accepted when all of these hold:

- It is a compact JWS (``header.payload.signature``) signed with an asymmetric algorithm:
  ``RS256``/``RS384``/``RS512``, ``PS256``/``PS384``/``PS512``, ``ES256``/``ES384``/``ES512``
  or ``EdDSA``. ``none`` and the HMAC algorithms (``HS*``) are always refused, so a
  public key can never be misused as a shared secret.
- Its header ``kid`` names a key of the configured JWKS (``RECALLMESH_JWT_JWKS``: a file
  path, re-read whenever the file changes, or an ``http(s)://`` URL, cached for five
  minutes and fetched again early when a token names an unknown ``kid``). A token without
  ``kid`` is accepted only when the set holds exactly one signing key. A key that states
  its ``alg`` verifies only that algorithm; otherwise its type decides (RSA: RS*/PS*,
  EC P-256/P-384/P-521: ES256/ES384/ES512, OKP: EdDSA). Symmetric (``oct``) keys, keys
  marked ``"use": "enc"`` and RSA keys shorter than 2048 bits are ignored.
- ``exp`` is present and in the future, ``nbf`` and ``iat`` (when present) are not in the
  future, each within ``RECALLMESH_JWT_LEEWAY_S`` seconds (default 30) of clock skew.
- ``iss`` equals ``RECALLMESH_JWT_ISSUER`` and ``aud`` (a string or a list) contains
  ``RECALLMESH_JWT_AUDIENCE``.

The caller's namespace grants come from the claim named by
``RECALLMESH_JWT_NAMESPACES_CLAIM`` (default ``recallmesh_namespaces``), which must be
present and hold either a JSON list of strings or one space-separated string. Each entry is
an exact namespace (``acme-alice``), a prefix pattern ending in ``*`` (``acme-*``) or ``*``
(every namespace). A namespace that contains a space can only be granted in the list form.

The caller's scopes come from the claim named by ``RECALLMESH_JWT_SCOPES_CLAIM`` (default
``scope``, as in OAuth 2.0), which holds a space-separated string or a list of strings.
``read``, ``write`` and ``admin`` are recognised, bare or prefixed ``recallmesh:``
(``recallmesh:read``), in any case; every other scope is ignored, so a token may also carry
other applications' scopes. A token without the claim holds no scopes.

For example, a token whose payload is::

    {"iss": "https://idp.example.com/", "aud": "recallmesh", "sub": "agent-7",
     "exp": 1767225600, "recallmesh_namespaces": ["acme-*", "shared"],
     "scope": "openid recallmesh:read recallmesh:write"}

may read and write every namespace starting with ``acme-`` and the namespace ``shared``.
It is logged and audited as ``jwt:agent-7``.

Every rejected token raises ``Unauthenticated`` with a short message that names what is
wrong and never repeats the token. A key set that cannot be loaded at all (the file is
unreadable, the URL does not answer) raises ``Unavailable``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.error import HTTPError

import jwt
from jwt.exceptions import InvalidJTIError, InvalidSubjectError

from recallmesh.auth.principal import Principal, Scope, parse_grant
from recallmesh.shared.errors import InvalidArgument, Unauthenticated, Unavailable
from recallmesh.shared.settings import AuthSettings

log = logging.getLogger(__name__)

ACCEPTED_ALGORITHMS = frozenset({
    "RS256", "RS384", "RS512",
    "PS256", "PS384", "PS512",
    "ES256", "ES384", "ES512",
    "EdDSA",
})
_RSA_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512"})
_EC_ALGORITHMS = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}

# Far above any real token (gRPC's default metadata limit is 8 KiB); refused before parsing.
MAX_TOKEN_CHARS = 16384
# A compact JWS: three base64url segments (PyJWT also accepts '=' padding).
_COMPACT_JWS = re.compile(r"[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]*\.[A-Za-z0-9_=-]*")
_SCOPE_PREFIX = "recallmesh:"
MIN_RSA_BITS = 2048  # NIST SP 800-131A; shorter RSA keys in the set are ignored
_MAX_SUBJECT_CHARS = 128
_MAX_ECHO_CHARS = 64  # of a header value (kid, alg) quoted back in a message

# A URL key set is fetched again after this long, and at most this often for unknown kids.
URL_CACHE_S = 300.0
URL_REFRESH_COOLDOWN_S = 30.0
URL_TIMEOUT_S = 10.0
URL_RETRY_S = 1.0  # before any set has loaded: how soon a failed fetch is tried again
FILE_RETRY_S = 1.0  # how soon a file version that failed to load is read again


@dataclass(frozen=True)
class _Key:
    kid: str | None
    key: Any  # a cryptography public key object
    algorithms: frozenset[str]


class _KeySet:
    """The usable signing keys of one JWKS document (``{"keys": [...]}``), by kid.

    Each entry is loaded with jwt.PyJWK, as jwt.PyJWKSet does (entries it cannot load are
    skipped), but from the JSON object itself so that an entry's own ``alg`` is known."""

    def __init__(self, document: object) -> None:
        entries = document.get("keys") if isinstance(document, dict) else None
        if not isinstance(entries, list):
            raise jwt.PyJWKSetError("not a JWK Set")
        keys: list[_Key] = []
        for entry in entries:
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            algorithms = _key_algorithms(entry)
            kid = entry.get("kid")
            if not algorithms or not (kid is None or isinstance(kid, str)):
                log.warning("JWKS key %r (kty %r) is not usable for any accepted algorithm; "
                            "ignored", kid, entry.get("kty"))
                continue
            try:
                jwk = jwt.PyJWK.from_dict(entry)
            except (jwt.PyJWTError, ValueError, TypeError, KeyError) as exc:
                log.warning("JWKS key %r cannot be loaded (%s); ignored", kid, exc)
                continue
            if entry.get("kty") == "RSA" and jwk.key.key_size < MIN_RSA_BITS:
                log.warning("JWKS key %r is a %d-bit RSA key (at least %d bits are needed); "
                            "ignored", kid, jwk.key.key_size, MIN_RSA_BITS)
                continue
            keys.append(_Key(kid, jwk.key, algorithms))
        if not keys:
            raise jwt.PyJWKSetError("the key set holds no usable asymmetric signing keys")
        self.keys = tuple(keys)
        self.by_kid = {k.kid: k for k in keys if k.kid is not None}

    @classmethod
    def from_json(cls, text: str) -> _KeySet:
        return cls(json.loads(text))

    def select(self, kid: str | None) -> _Key | None:
        if kid is None:
            return self.keys[0] if len(self.keys) == 1 else None
        return self.by_kid.get(kid)


def _key_algorithms(data: Mapping[str, Any]) -> frozenset[str]:
    """The accepted algorithms one JWK may verify: its own `alg` when it states one,
    otherwise those its key type and curve allow (PyJWK alone would pin an RSA key without
    `alg` to RS256)."""
    stated = data.get("alg")
    kty = data.get("kty")
    if stated is not None:
        return frozenset({stated}) & ACCEPTED_ALGORITHMS if isinstance(stated, str) else (
            frozenset())
    if kty == "RSA":
        return _RSA_ALGORITHMS
    if kty == "EC":
        crv = data.get("crv", "P-256")
        alg = _EC_ALGORITHMS.get(crv) if isinstance(crv, str) else None
        return frozenset({alg}) if alg else frozenset()
    if kty == "OKP":
        return frozenset({"EdDSA"})
    return frozenset()  # oct (symmetric) keys are never used


_NO_FILE = (-1, -1, -1)


class _FileKeys:
    """A JWKS file, re-read when its mtime, size or inode changes (rotation, a Kubernetes
    Secret's symlink swap); a file that breaks mid-rotation (or disappears) keeps the last
    good set, with one warning per broken version."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._keys: _KeySet | None = None
        self._stamp: tuple[int, int, int] | None = None
        self._warned: tuple[int, int, int] | None = None
        self._failed_at = float("-inf")
        self._error = "the key set file has not been read yet"

    async def get(self, kid: str | None) -> _KeySet:
        self._reload_if_changed()
        if self._keys is None:
            raise Unavailable(f"JWT keys unavailable: {self._error}")
        return self._keys

    def _reload_if_changed(self) -> None:
        try:
            st = os.stat(self.path)
        except OSError as exc:
            self._warn_once(_NO_FILE, _reason(exc))
            return
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
        if stamp == self._stamp:
            return
        if stamp == self._warned and time.monotonic() - self._failed_at < FILE_RETRY_S:
            return  # a broken version is read again at most every FILE_RETRY_S
        try:
            with open(self.path, encoding="utf-8") as f:
                keys = _KeySet.from_json(f.read())
        except (OSError, ValueError, jwt.PyJWTError) as exc:
            # Not recorded as loaded: a partly written file whose completion keeps the same
            # mtime (coarse timestamps) is read again after FILE_RETRY_S.
            self._failed_at = time.monotonic()
            self._warn_once(stamp, _reason(exc))
            return
        self._keys, self._stamp, self._warned = keys, stamp, None
        log.info("loaded %d JWT signing key(s) from %s", len(keys.keys), self.path)

    def _warn_once(self, stamp: tuple[int, int, int], reason: str) -> None:
        self._error = reason
        if stamp == self._warned:
            return
        self._warned = stamp
        kept = "keeping the last good key set" if self._keys else "no key set loaded yet"
        log.warning("JWKS file %s is not usable (%s); %s", self.path, reason, kept)


class _UrlKeys:
    """A JWKS URL, fetched through PyJWKClient in a worker thread when the cached set is
    older than URL_CACHE_S or (at most every URL_REFRESH_COOLDOWN_S) a token names an
    unknown kid. A failed refresh keeps serving the last good set."""

    def __init__(self, url: str) -> None:
        self.url = url
        # PyJWKClient's own cache is off: this class decides when to fetch, so the event
        # loop never blocks on the network.
        self._client = jwt.PyJWKClient(url, cache_jwk_set=False, timeout=URL_TIMEOUT_S)
        self._keys: _KeySet | None = None
        self._loaded_at = float("-inf")  # last successful fetch
        self._tried_at = float("-inf")  # last attempt, successful or not
        self._error = "the key set URL has not been fetched yet"
        self._lock = asyncio.Lock()

    async def get(self, kid: str | None) -> _KeySet:
        keys = self._keys
        if keys is not None and not self._due(kid):
            return keys
        async with self._lock:
            if self._due(kid):  # not fetched meanwhile by the task that held the lock
                await self._fetch()
            if self._keys is None:
                raise Unavailable(f"JWT keys unavailable: {self._error}")
            return self._keys

    def _due(self, kid: str | None) -> bool:
        """Whether to fetch now: nothing is loaded and the last attempt is older than
        URL_RETRY_S; or the last attempt is older than URL_REFRESH_COOLDOWN_S and either the
        set is older than URL_CACHE_S or `kid` is unknown. So a failing endpoint or a flood
        of made-up kids costs at most one request per cooldown, never one per token."""
        now = time.monotonic()
        tried = now - self._tried_at
        if self._keys is None:
            return tried >= URL_RETRY_S
        if tried < URL_REFRESH_COOLDOWN_S:
            return False
        return now - self._loaded_at >= URL_CACHE_S or self._keys.select(kid) is None

    async def _fetch(self) -> None:
        self._tried_at = time.monotonic()
        try:
            keys = _KeySet(await asyncio.to_thread(self._client.fetch_data))
        except (OSError, ValueError, jwt.PyJWTError) as exc:
            self._error = _reason(exc)
            kept = "keeping the last good key set" if self._keys else "no key set loaded yet"
            log.warning("JWKS URL %s is not usable (%s); %s", self.url, exc, kept)
            return
        self._keys, self._loaded_at = keys, self._tried_at
        log.info("loaded %d JWT signing key(s) from %s", len(keys.keys), self.url)


def _reason(exc: BaseException) -> str:
    """A short, internals-free reason a key set could not be loaded (the log has the rest)."""
    if isinstance(exc, jwt.PyJWKClientConnectionError):
        if isinstance(exc.__cause__, HTTPError):
            return f"the key set URL answered HTTP {exc.__cause__.code}"
        return "the key set URL could not be reached"
    if isinstance(exc, ValueError | jwt.PyJWKClientError):  # JSONDecodeError, bad UTF-8
        return "the key set is not a JSON object"
    if isinstance(exc, jwt.PyJWKSetError):
        return "the key set holds no usable signing keys"
    if isinstance(exc, FileNotFoundError):
        return "the key set file does not exist"
    if isinstance(exc, OSError):
        return "the key set file cannot be read"
    return "the key set cannot be loaded"


def _echo(value: object) -> str:
    """A header value quoted back to the caller: repr-escaped and truncated."""
    text = value if isinstance(value, str) else str(value)
    if len(text) > _MAX_ECHO_CHARS:
        text = text[:_MAX_ECHO_CHARS] + "…"
    return repr(text)


def _subject(sub: object) -> str:
    if not isinstance(sub, str) or not sub:
        return "jwt:?"
    text = "".join(c if c.isprintable() else "?" for c in sub[:_MAX_SUBJECT_CHARS])
    return f"jwt:{text}"


class JwtVerifier:
    """Verifies JWT bearer tokens against the configured JWKS, issuer and audience."""

    def __init__(self, settings: AuthSettings) -> None:
        if not (settings.jwt_jwks and settings.jwt_issuer and settings.jwt_audience):
            raise ValueError("JwtVerifier needs jwt_jwks, jwt_issuer and jwt_audience")
        self.settings = settings
        source = settings.jwt_jwks
        self._keys: _FileKeys | _UrlKeys
        if source.lower().startswith(("http://", "https://")):
            self._keys = _UrlKeys(source)
        else:
            self._keys = _FileKeys(source)
        self._jwt = jwt.PyJWT(options={"require": ["exp", "iss", "aud"]})

    async def load_keys(self) -> int:
        """Loads the key set now (for a startup or readiness check): the number of usable
        signing keys, or Unavailable."""
        return len((await self._keys.get(None)).keys)

    async def verify(self, token: str) -> Principal:
        """The Principal a valid token names; Unauthenticated for any invalid token,
        Unavailable when no key set can be loaded."""
        if not isinstance(token, str):
            raise Unauthenticated("malformed JWT")
        token = token.strip()
        if len(token) > MAX_TOKEN_CHARS:
            raise Unauthenticated(f"malformed JWT (longer than {MAX_TOKEN_CHARS} characters)")
        if not _COMPACT_JWS.fullmatch(token):
            raise Unauthenticated("malformed JWT")
        try:
            header = jwt.get_unverified_header(token)
        except (jwt.PyJWTError, ValueError, TypeError):
            raise Unauthenticated("malformed JWT") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or not alg:
            raise Unauthenticated("malformed JWT (no 'alg' header)")
        if alg not in ACCEPTED_ALGORITHMS:
            raise Unauthenticated(f"JWT algorithm {_echo(alg)} is not accepted")
        kid = header.get("kid")  # a str or absent: get_unverified_header checks its type

        keys = await self._keys.get(kid)
        key = keys.select(kid)
        if key is None:
            if kid is None:
                raise Unauthenticated("JWT has no key id ('kid') and the key set holds "
                                      "several keys")
            raise Unauthenticated(f"JWT key id {_echo(kid)} is unknown")
        if alg not in key.algorithms:
            raise Unauthenticated(f"JWT algorithm {_echo(alg)} is not accepted for key id "
                                  f"{_echo(kid)}")

        claims = self._decode(token, key, alg)
        return Principal(
            subject=_subject(claims.get("sub")),
            grants=self._grants(claims),
            scopes=self._scopes(claims),
            kind="jwt",
        )

    def _decode(self, token: str, key: _Key, alg: str) -> dict[str, Any]:
        s = self.settings
        try:
            return self._jwt.decode(token, key.key, algorithms=[alg], audience=s.jwt_audience,
                                    issuer=s.jwt_issuer, leeway=s.jwt_leeway_s)
        except jwt.ExpiredSignatureError:
            raise Unauthenticated("JWT expired") from None
        except jwt.ImmatureSignatureError:
            raise Unauthenticated("JWT not yet valid") from None
        except jwt.InvalidAudienceError:
            raise Unauthenticated(f"JWT audience is not {s.jwt_audience!r}") from None
        except jwt.InvalidIssuerError:
            raise Unauthenticated(f"JWT issuer is not {s.jwt_issuer!r}") from None
        except jwt.MissingRequiredClaimError as exc:
            raise Unauthenticated(f"JWT has no {exc.claim!r} claim") from None
        except jwt.InvalidSignatureError:
            raise Unauthenticated("JWT signature does not verify") from None
        except jwt.InvalidAlgorithmError:
            raise Unauthenticated(f"JWT algorithm {_echo(alg)} is not accepted") from None
        except InvalidSubjectError:
            raise Unauthenticated("JWT claim 'sub' must be a string") from None
        except InvalidJTIError:
            raise Unauthenticated("JWT claim 'jti' must be a string") from None
        except jwt.InvalidIssuedAtError:
            raise Unauthenticated("JWT claim 'iat' must be a number") from None
        except jwt.InvalidKeyError as exc:
            log.warning("JWT key %r cannot verify %s: %s", key.kid, alg, exc)
            raise Unauthenticated("JWT signature does not verify") from None
        except (jwt.PyJWTError, ValueError, TypeError, OverflowError):
            # DecodeError: bad base64/JSON, a non-numeric exp/nbf, a bad 'crit' header ...
            raise Unauthenticated("malformed JWT") from None

    def _grants(self, claims: Mapping[str, Any]) -> tuple[str, ...]:
        name = self.settings.jwt_namespaces_claim
        raw = claims.get(name)
        if raw is None:
            raise Unauthenticated(f"JWT has no {name!r} claim (its namespace grants)")
        entries = _string_list(raw, sep=" ")
        if entries is None:
            raise Unauthenticated(f"JWT claim {name!r} must be a list of strings or a "
                                  "space-separated string")
        grants: list[str] = []
        for entry in entries:
            if not entry.strip():
                continue
            try:
                grant = parse_grant(entry, name)
            except InvalidArgument:
                raise Unauthenticated(f"JWT claim {name!r} holds an invalid namespace "
                                      "grant") from None
            if grant not in grants:
                grants.append(grant)
        if not grants:
            raise Unauthenticated(f"JWT claim {name!r} holds no namespace grants")
        return tuple(grants)

    def _scopes(self, claims: Mapping[str, Any]) -> frozenset[Scope]:
        name = self.settings.jwt_scopes_claim
        raw = claims.get(name)
        if raw is None:
            return frozenset()
        entries = _string_list(raw)
        if entries is None:
            raise Unauthenticated(f"JWT claim {name!r} must be a space-separated string or "
                                  "a list of strings")
        scopes = set()
        for entry in entries:
            for word in entry.split():
                value = word.lower()
                if value.startswith(_SCOPE_PREFIX):
                    value = value[len(_SCOPE_PREFIX):]
                try:
                    scopes.add(Scope(value))
                except ValueError:
                    continue  # another application's scope
        return frozenset(scopes)


def _string_list(raw: object, sep: str | None = None) -> list[str] | None:
    """A claim holding a `sep`-separated string (None: any whitespace) or a list of strings,
    as its entries (None for any other shape)."""
    if isinstance(raw, str):
        return raw.split(sep)
    if isinstance(raw, list) and all(isinstance(v, str) for v in raw):
        return list(raw)
    return None
