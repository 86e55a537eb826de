"""A small JWT issuer for tests: signing keys, a JWKS file, and minted tokens.

    issuer = TestIssuer()                     # one RSA key, kid "rsa-1"
    issuer.add_ec_key()                       # and an EC P-256 key, kid "ec-1"
    issuer.write_jwks(tmp_path / "jwks.json")
    token = issuer.mint(namespaces=["acme-*"], scopes="recallmesh:read")

`untrusted()` makes an issuer whose keys carry the same kids but different key material
(tokens it mints must fail signature verification). Every key is generated per instance;
nothing here is a secret worth keeping.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

ISSUER = "https://idp.test.example/"
AUDIENCE = "recallmesh"
NAMESPACES_CLAIM = "recallmesh_namespaces"
SCOPES_CLAIM = "scope"

_CURVES: dict[str, type[ec.EllipticCurve]] = {
    "ES256": ec.SECP256R1, "ES384": ec.SECP384R1, "ES512": ec.SECP521R1}


@dataclass
class SigningKey:
    kid: str
    alg: str  # the default algorithm tokens signed with it use
    private: Any  # a cryptography private key

    def public_jwk(self, *, with_alg: bool = True) -> dict[str, Any]:
        public = self.private.public_key()
        if isinstance(public, rsa.RSAPublicKey):
            jwk = RSAAlgorithm.to_jwk(public, as_dict=True)
        elif isinstance(public, ec.EllipticCurvePublicKey):
            jwk = ECAlgorithm.to_jwk(public, as_dict=True)
        else:
            jwk = OKPAlgorithm.to_jwk(public, as_dict=True)
        jwk.update(kid=self.kid, use="sig")
        if with_alg:
            jwk["alg"] = self.alg
        return jwk


def rsa_key(kid: str = "rsa-1", alg: str = "RS256", bits: int = 2048) -> SigningKey:
    return SigningKey(kid, alg, rsa.generate_private_key(public_exponent=65537, key_size=bits))


def ec_key(kid: str = "ec-1", alg: str = "ES256") -> SigningKey:
    return SigningKey(kid, alg, ec.generate_private_key(_CURVES[alg]()))


def ed25519_key(kid: str = "ed-1") -> SigningKey:
    return SigningKey(kid, "EdDSA", ed25519.Ed25519PrivateKey.generate())


class TestIssuer:
    """Signing keys (the first is the default) and the claims every token carries."""

    __test__ = False  # not a pytest test class

    def __init__(self, *, iss: str = ISSUER, aud: str | list[str] = AUDIENCE,
                 keys: list[SigningKey] | None = None, rsa_bits: int = 2048) -> None:
        self.iss = iss
        self.aud = aud
        self.keys: list[SigningKey] = list(keys) if keys is not None else [
            rsa_key(bits=rsa_bits)]

    def key(self, kid: str | None = None) -> SigningKey:
        if kid is None:
            return self.keys[0]
        for key in self.keys:
            if key.kid == kid:
                return key
        raise KeyError(kid)

    def add_rsa_key(self, kid: str = "rsa-2", alg: str = "RS256") -> SigningKey:
        key = rsa_key(kid, alg)
        self.keys.append(key)
        return key

    def add_ec_key(self, kid: str = "ec-1", alg: str = "ES256") -> SigningKey:
        key = ec_key(kid, alg)
        self.keys.append(key)
        return key

    def add_ed25519_key(self, kid: str = "ed-1") -> SigningKey:
        key = ed25519_key(kid)
        self.keys.append(key)
        return key

    def untrusted(self) -> TestIssuer:
        """An issuer with the same claims and kids but freshly generated key material."""
        fresh = []
        for key in self.keys:
            public = key.private.public_key()
            if isinstance(public, rsa.RSAPublicKey):
                fresh.append(rsa_key(key.kid, key.alg, public.key_size))
            elif isinstance(public, ec.EllipticCurvePublicKey):
                fresh.append(ec_key(key.kid, key.alg))
            else:
                fresh.append(ed25519_key(key.kid))
        return TestIssuer(iss=self.iss, aud=self.aud, keys=fresh)

    def jwks(self, *, with_alg: bool = True) -> dict[str, Any]:
        return {"keys": [k.public_jwk(with_alg=with_alg) for k in self.keys]}

    def write_jwks(self, path: str | os.PathLike[str], *, with_alg: bool = True,
                   bump_mtime: bool = True) -> Path:
        """Writes the public JWKS to `path` (atomically, by rename). With `bump_mtime` the
        file's mtime moves forward a second past the previous one, so a reader that
        watches mtimes sees the change even on a filesystem with coarse timestamps."""
        path = Path(path)
        before = path.stat().st_mtime_ns if path.exists() else None
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.jwks(with_alg=with_alg)), encoding="utf-8")
        os.replace(tmp, path)
        if bump_mtime and before is not None:
            bumped = max(before + 1_000_000_000, path.stat().st_mtime_ns)
            os.utime(path, ns=(bumped, bumped))
        return path

    def public_pem(self, kid: str | None = None) -> bytes:
        from cryptography.hazmat.primitives import serialization

        pem: bytes = self.key(kid).private.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        return pem

    def claims(self, *, namespaces: Any = ("acme-*",), scopes: Any = "read write",
               sub: str | None = "agent-7", aud: Any = None, iss: Any = None,
               exp_in_s: float | None = 300, nbf_in_s: float | None = None,
               iat_in_s: float | None = 0, **extra: Any) -> dict[str, Any]:
        """The payload `mint` signs. `namespaces` / `scopes`: a list or tuple (a JSON list),
        a str (as is) or None (claim left out); `exp_in_s` / `nbf_in_s` / `iat_in_s`: seconds
        from now, None to leave the claim out. `extra` claims are added last (and win)."""
        now = time.time()
        payload: dict[str, Any] = {"iss": self.iss if iss is None else iss,
                                   "aud": self.aud if aud is None else aud}
        if sub is not None:
            payload["sub"] = sub
        for name, value in ((NAMESPACES_CLAIM, namespaces), (SCOPES_CLAIM, scopes)):
            if value is not None:
                payload[name] = list(value) if isinstance(value, list | tuple) else value
        for name, offset in (("exp", exp_in_s), ("nbf", nbf_in_s), ("iat", iat_in_s)):
            if offset is not None:
                payload[name] = int(now + offset)
        payload.update(extra)
        return payload

    def mint(self, *, kid: str | None = None, key: SigningKey | None = None,
             alg: str | None = None, headers: dict[str, Any] | None = None,
             omit_kid: bool = False, **claims: Any) -> str:
        """A signed token. `key` (or the key named `kid`, else the first key) signs it with
        `alg` (default: the key's). The header carries the key's kid unless `omit_kid`;
        `headers` adds or overrides header fields. `claims` go to `claims()`."""
        signer = key or self.key(kid)
        header: dict[str, Any] = {} if omit_kid else {"kid": signer.kid}
        header.update(headers or {})
        return jwt.encode(self.claims(**claims), signer.private, algorithm=alg or signer.alg,
                          headers=header)

    def mint_payload(self, payload: dict[str, Any], *, kid: str | None = None,
                     alg: str | None = None) -> str:
        """A signed token with exactly `payload` (no claims added)."""
        signer = self.key(kid)
        return jwt.encode(payload, signer.private, algorithm=alg or signer.alg,
                          headers={"kid": signer.kid})
