"""JWT bearer tokens (recallmesh/auth/jwt_tokens.py): what verifies, what is refused and
with which message, and where the keys come from (a rotating file, a URL on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recallmesh.auth import jwt_tokens
from recallmesh.auth.jwt_tokens import JwtVerifier
from recallmesh.auth.principal import Scope
from recallmesh.shared.errors import Unauthenticated, Unavailable
from recallmesh.shared.settings import AuthSettings
from tests.jwt_issuer import AUDIENCE, ISSUER, TestIssuer, rsa_key

NS = "recallmesh_namespaces"
LOGGER = "recallmesh.auth.jwt_tokens"


def auth_settings(jwks: str | Path, jwt_issuer: str = ISSUER, jwt_audience: str = AUDIENCE,
                  jwt_namespaces_claim: str = NS, jwt_scopes_claim: str = "scope"
                  ) -> AuthSettings:
    return AuthSettings(jwt_jwks=str(jwks), jwt_issuer=jwt_issuer, jwt_audience=jwt_audience,
                        jwt_namespaces_claim=jwt_namespaces_claim,
                        jwt_scopes_claim=jwt_scopes_claim, jwt_leeway_s=30.0)


@pytest.fixture(scope="module")
def issuer() -> TestIssuer:
    """RSA (rsa-1, RS256), EC P-256 (ec-1, ES256) and Ed25519 (ed-1) keys."""
    issuer = TestIssuer()
    issuer.add_ec_key()
    issuer.add_ed25519_key()
    return issuer


@pytest.fixture
def jwks_file(tmp_path: Path, issuer: TestIssuer) -> Path:
    return issuer.write_jwks(tmp_path / "jwks.json")


@pytest.fixture
def verifier(jwks_file: Path) -> JwtVerifier:
    return JwtVerifier(auth_settings(jwks_file))


async def refused(verifier: JwtVerifier, token: str) -> str:
    """The Unauthenticated message `token` gets; it never repeats the token."""
    with pytest.raises(Unauthenticated) as info:
        await verifier.verify(token)
    message = info.value.message
    if len(token) > 8:
        for segment in token.split("."):
            assert len(segment) < 8 or segment not in message
    return message


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def forge(header: dict[str, Any], payload: dict[str, Any],
          signature: bytes = b"not-a-signature") -> str:
    return ".".join((b64(json.dumps(header).encode()), b64(json.dumps(payload).encode()),
                     b64(signature)))


# --- tokens that verify ----------------------------------------------------------------------


@pytest.mark.parametrize("kid", ["rsa-1", "ec-1", "ed-1"])
async def test_a_good_token_gives_its_grants_and_scopes(verifier: JwtVerifier, issuer: TestIssuer,
                                                        kid: str) -> None:
    token = issuer.mint(kid=kid, namespaces=["acme-*", "shared"], scopes="read write")
    principal = await verifier.verify(token)
    assert principal.kind == "jwt"
    assert principal.subject == "jwt:agent-7"
    assert principal.grants == ("acme-*", "shared")
    assert principal.scopes == {Scope.READ, Scope.WRITE}
    assert principal.allows("acme-alice") and principal.allows("shared")
    assert not principal.allows("other")


async def test_the_algorithm_comes_from_the_token_header(verifier: JwtVerifier,
                                                         issuer: TestIssuer) -> None:
    assert issuer.key("rsa-1").alg == "RS256"
    principal = await verifier.verify(issuer.mint(kid="ec-1", alg="ES256"))
    assert principal.grants == ("acme-*",)


@pytest.mark.parametrize("namespaces, expected", [
    (["acme-*", "shared"], ("acme-*", "shared")),
    ("acme-* shared", ("acme-*", "shared")),
    ("  acme-*   shared ", ("acme-*", "shared")),
    (["team one", "*"], ("team one", "*")),  # a namespace with a space: the list form only
    (["a", "a", " a "], ("a",)),
])
async def test_namespaces_claim_as_a_list_or_a_string(verifier: JwtVerifier, issuer: TestIssuer,
                                                      namespaces: list[str] | str,
                                                      expected: tuple[str, ...]) -> None:
    assert (await verifier.verify(issuer.mint(namespaces=namespaces))).grants == expected


@pytest.mark.parametrize("scopes, expected", [
    ("read", {Scope.READ}),
    ("read write admin", {Scope.READ, Scope.WRITE, Scope.ADMIN}),
    (["read", "admin"], {Scope.READ, Scope.ADMIN}),
    ("openid profile recallmesh:read other:write", {Scope.READ}),
    (["recallmesh:write", "email", "RECALLMESH:Admin"], {Scope.WRITE, Scope.ADMIN}),
    ("recallmesh:everything readonly", set()),
    ("", set()),
    (None, set()),  # no scope claim: a token that may do nothing
])
async def test_scopes_claim_keeps_known_scopes_only(verifier: JwtVerifier, issuer: TestIssuer,
                                                    scopes: str | list[str] | None,
                                                    expected: set[Scope]) -> None:
    assert (await verifier.verify(issuer.mint(scopes=scopes))).scopes == expected


async def test_claim_names_come_from_the_settings(jwks_file: Path, issuer: TestIssuer) -> None:
    verifier = JwtVerifier(auth_settings(jwks_file, jwt_namespaces_claim="ns",
                                         jwt_scopes_claim="scp"))
    token = issuer.mint(namespaces=None, scopes=None, ns=["team-*"], scp=["recallmesh:admin"])
    principal = await verifier.verify(token)
    assert principal.grants == ("team-*",) and principal.scopes == {Scope.ADMIN}
    assert await refused(verifier, issuer.mint()) == "JWT has no 'ns' claim (its namespace grants)"


async def test_audience_may_be_a_list_that_contains_ours(verifier: JwtVerifier,
                                                         issuer: TestIssuer) -> None:
    principal = await verifier.verify(issuer.mint(aud=["other-api", AUDIENCE]))
    assert principal.grants == ("acme-*",)


async def test_subject_without_sub_and_with_odd_characters(verifier: JwtVerifier,
                                                           issuer: TestIssuer) -> None:
    assert (await verifier.verify(issuer.mint(sub=None))).subject == "jwt:?"
    assert (await verifier.verify(issuer.mint(sub="a\nb"))).subject == "jwt:a?b"
    assert len((await verifier.verify(issuer.mint(sub="x" * 1000))).subject) == 4 + 128


async def test_a_token_without_kid_uses_the_only_key(tmp_path: Path) -> None:
    single = TestIssuer()
    verifier = JwtVerifier(auth_settings(single.write_jwks(tmp_path / "one.json")))
    assert (await verifier.verify(single.mint(omit_kid=True))).subject == "jwt:agent-7"


async def test_a_token_without_kid_is_refused_when_there_are_several_keys(
        verifier: JwtVerifier, issuer: TestIssuer) -> None:
    assert await refused(verifier, issuer.mint(omit_kid=True)) == (
        "JWT has no key id ('kid') and the key set holds several keys")


async def test_rsa_key_without_alg_accepts_rs_and_ps_algorithms(tmp_path: Path) -> None:
    single = TestIssuer()
    verifier = JwtVerifier(auth_settings(single.write_jwks(tmp_path / "k.json",
                                                           with_alg=False)))
    for alg in ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"):
        assert (await verifier.verify(single.mint(alg=alg))).kind == "jwt", alg


async def test_a_key_that_states_its_alg_verifies_only_that_alg(verifier: JwtVerifier,
                                                                issuer: TestIssuer) -> None:
    assert await refused(verifier, issuer.mint(kid="rsa-1", alg="PS256")) == (
        "JWT algorithm 'PS256' is not accepted for key id 'rsa-1'")
    # an RSA-signed token that names the EC key's kid (algorithm confusion across keys)
    token = issuer.mint(key=issuer.key("rsa-1"), headers={"kid": "ec-1"})
    assert await refused(verifier, token) == (
        "JWT algorithm 'RS256' is not accepted for key id 'ec-1'")


# --- tokens that are refused -----------------------------------------------------------------


async def test_bad_signature(verifier: JwtVerifier, issuer: TestIssuer) -> None:
    forged = issuer.untrusted()  # same kids, other key material
    for kid in ("rsa-1", "ec-1", "ed-1"):
        assert await refused(verifier, forged.mint(kid=kid)) == "JWT signature does not verify"


async def test_tampered_payload(verifier: JwtVerifier, issuer: TestIssuer) -> None:
    header, _, signature = issuer.mint().split(".")
    payload = issuer.claims(namespaces=["*"], scopes="admin")
    tampered = ".".join((header, b64(json.dumps(payload).encode()), signature))
    assert await refused(verifier, tampered) == "JWT signature does not verify"


async def test_wrong_audience(verifier: JwtVerifier, issuer: TestIssuer) -> None:
    assert await refused(verifier, issuer.mint(aud="someone-else")) == (
        "JWT audience is not 'recallmesh'")
    assert await refused(verifier, issuer.mint(aud=["a", "b"])) == (
        "JWT audience is not 'recallmesh'")


async def test_wrong_issuer(verifier: JwtVerifier, issuer: TestIssuer) -> None:
    assert await refused(verifier, issuer.mint(iss="https://evil.example/")) == (
        f"JWT issuer is not {ISSUER!r}")


async def test_expired_beyond_the_leeway(verifier: JwtVerifier, issuer: TestIssuer) -> None:
    assert await refused(verifier, issuer.mint(exp_in_s=-60)) == "JWT expired"
    # within the 30 s leeway: still accepted
    assert (await verifier.verify(issuer.mint(exp_in_s=-10))).kind == "jwt"


async def test_not_yet_valid(verifier: JwtVerifier, issuer: TestIssuer) -> None:
    assert await refused(verifier, issuer.mint(nbf_in_s=120)) == "JWT not yet valid"
    assert await refused(verifier, issuer.mint(iat_in_s=120)) == "JWT not yet valid"
    assert (await verifier.verify(issuer.mint(nbf_in_s=10))).kind == "jwt"


@pytest.mark.parametrize("claim", ["exp", "iss", "aud"])
async def test_required_claims(verifier: JwtVerifier, issuer: TestIssuer, claim: str) -> None:
    payload = issuer.claims()
    del payload[claim]
    assert await refused(verifier, issuer.mint_payload(payload)) == (
        f"JWT has no {claim!r} claim")


async def test_non_numeric_exp_is_malformed(verifier: JwtVerifier, issuer: TestIssuer) -> None:
    payload = issuer.claims(exp="tomorrow")
    assert await refused(verifier, issuer.mint_payload(payload)) == "malformed JWT"


async def test_unknown_kid(verifier: JwtVerifier, issuer: TestIssuer) -> None:
    stranger = rsa_key("nope")
    assert await refused(verifier, issuer.mint(key=stranger)) == "JWT key id 'nope' is unknown"
    # a long kid is cut short in the message
    long_kid = rsa_key("k" * 500)
    message = await refused(verifier, issuer.mint(key=long_kid))
    assert message.startswith("JWT key id 'kkkk") and len(message) < 100


async def test_hs256_signed_with_the_public_key_is_refused(verifier: JwtVerifier,
                                                           issuer: TestIssuer) -> None:
    """The classic algorithm confusion: HMAC 'signed' with the RSA public key as secret."""
    pem = issuer.public_pem("rsa-1")
    header = {"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}
    signing_input = ".".join((b64(json.dumps(header).encode()),
                              b64(json.dumps(issuer.claims()).encode())))
    mac = hmac.new(pem, signing_input.encode(), hashlib.sha256).digest()
    token = f"{signing_input}.{b64(mac)}"
    assert await refused(verifier, token) == "JWT algorithm 'HS256' is not accepted"
    for alg in ("HS384", "HS512"):
        assert await refused(verifier, forge({**header, "alg": alg}, issuer.claims())) == (
            f"JWT algorithm {alg!r} is not accepted")


async def test_alg_none_is_refused(verifier: JwtVerifier, issuer: TestIssuer) -> None:
    for alg in ("none", "None", "NONE"):
        token = forge({"alg": alg, "kid": "rsa-1"}, issuer.claims(), signature=b"")
        assert await refused(verifier, token) == f"JWT algorithm {alg!r} is not accepted"


@pytest.mark.parametrize("token", [
    "", "   ", "abc", "a.b.c", "a.b", "a.b.c.d", "...", "Bearer x.y.z",
    "eyJhbGciOiJSUzI1NiJ9.e30",  # two segments
    "e30.e30.e30",  # a header without alg
    "bm90IGpzb24.e30.e30",  # a header that is not JSON
    "W10.e30.e30",  # a header that is a JSON list
    "ü.ü.ü",
    "\ud800.e30.e30",  # a lone surrogate cannot even be encoded
])
async def test_malformed_tokens(verifier: JwtVerifier, token: str) -> None:
    message = await refused(verifier, token)
    assert message.startswith("malformed JWT"), message


async def test_a_huge_token_is_refused_before_parsing(verifier: JwtVerifier) -> None:
    assert await refused(verifier, "a" * 20000 + ".b.c") == (
        "malformed JWT (longer than 16384 characters)")


async def test_a_non_string_kid_header_is_malformed(verifier: JwtVerifier,
                                                    issuer: TestIssuer) -> None:
    assert await refused(verifier, forge({"alg": "RS256", "kid": 5}, issuer.claims())) == (
        "malformed JWT")


async def test_missing_namespaces_claim(verifier: JwtVerifier, issuer: TestIssuer) -> None:
    assert await refused(verifier, issuer.mint(namespaces=None)) == (
        "JWT has no 'recallmesh_namespaces' claim (its namespace grants)")


@pytest.mark.parametrize("namespaces", [
    ["acme\x07bell"], "acme\x07bell", ["ok", "bad\u200bzero-width"], ["x" * 200],
    "acme\tteam",  # the string form splits on spaces only
])
async def test_an_invalid_grant_in_the_claim(verifier: JwtVerifier, issuer: TestIssuer,
                                             namespaces: list[str] | str) -> None:
    assert await refused(verifier, issuer.mint(namespaces=namespaces)) == (
        "JWT claim 'recallmesh_namespaces' holds an invalid namespace grant")


@pytest.mark.parametrize("namespaces", [5, {"a": 1}, ["a", 5], [["a"]], True])
async def test_a_namespaces_claim_of_the_wrong_shape(verifier: JwtVerifier, issuer: TestIssuer,
                                                     namespaces: object) -> None:
    assert await refused(verifier, issuer.mint(namespaces=namespaces)) == (
        "JWT claim 'recallmesh_namespaces' must be a list of strings or a space-separated "
        "string")


@pytest.mark.parametrize("namespaces", [[], "", "   ", ["", " "]])
async def test_an_empty_namespaces_claim(verifier: JwtVerifier, issuer: TestIssuer,
                                         namespaces: list[str] | str) -> None:
    assert await refused(verifier, issuer.mint(namespaces=namespaces)) == (
        "JWT claim 'recallmesh_namespaces' holds no namespace grants")


async def test_a_scopes_claim_of_the_wrong_shape(verifier: JwtVerifier, issuer: TestIssuer) -> None:
    assert await refused(verifier, issuer.mint(scopes=["read", 1])) == (
        "JWT claim 'scope' must be a space-separated string or a list of strings")


async def test_sub_jti_iat_of_the_wrong_type(verifier: JwtVerifier, issuer: TestIssuer) -> None:
    payload = issuer.claims()
    for claim, value, message in (("sub", 5, "JWT claim 'sub' must be a string"),
                                  ("jti", 5, "JWT claim 'jti' must be a string"),
                                  ("iat", "now", "JWT claim 'iat' must be a number")):
        token = issuer.mint_payload({**payload, claim: value})
        assert await refused(verifier, token) == message


def test_settings_without_issuer_or_audience_are_refused(jwks_file: Path) -> None:
    with pytest.raises(ValueError):
        JwtVerifier(auth_settings(jwks_file, jwt_issuer=""))
    with pytest.raises(ValueError):
        JwtVerifier(auth_settings(jwks_file, jwt_audience=""))


@settings(max_examples=300, deadline=None)
@given(token=st.one_of(
    st.text(max_size=300),
    st.lists(st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=",
                     max_size=60), min_size=1, max_size=5).map(".".join),
    st.tuples(st.dictionaries(st.sampled_from(["alg", "kid", "typ", "crit", "b64", "x"]),
                              st.one_of(st.text(max_size=8), st.integers(), st.none(),
                                        st.booleans(), st.lists(st.text(max_size=4)))),
              st.binary(max_size=80), st.binary(max_size=80))
    .map(lambda t: ".".join((b64(json.dumps(t[0]).encode()), b64(t[1]), b64(t[2])))),
))
def test_arbitrary_tokens_only_ever_raise_unauthenticated(jwks_path_for_property: Path,
                                                          token: str) -> None:
    verifier = JwtVerifier(auth_settings(jwks_path_for_property))
    loop = asyncio.new_event_loop()
    try:
        with pytest.raises(Unauthenticated):
            loop.run_until_complete(verifier.verify(token))
    finally:
        loop.close()


@pytest.fixture(scope="module")
def jwks_path_for_property(tmp_path_factory: pytest.TempPathFactory, issuer: TestIssuer) -> Path:
    return issuer.write_jwks(tmp_path_factory.mktemp("jwks") / "jwks.json")


# --- the key set: a rotating file ------------------------------------------------------------


async def test_a_rotated_jwks_file_is_picked_up_without_restart(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    old = TestIssuer(keys=[rsa_key("2024-key")])
    path = old.write_jwks(tmp_path / "jwks.json")
    verifier = JwtVerifier(auth_settings(path))
    old_token = old.mint()
    assert (await verifier.verify(old_token)).kind == "jwt"

    # mid-rotation the file is briefly broken: the last good set stays in use, with a warning
    path.write_text('{"keys": [', encoding="utf-8")
    stamp = path.stat().st_mtime_ns + 2_000_000_000
    os.utime(path, ns=(stamp, stamp))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert (await verifier.verify(old_token)).kind == "jwt"
        assert (await verifier.verify(old_token)).kind == "jwt"
    warnings = [r for r in caplog.records if r.name == LOGGER]
    assert len(warnings) == 1, "warned once per broken version, not per token"
    assert "keeping the last good key set" in warnings[0].getMessage()

    new = TestIssuer(keys=[rsa_key("2025-key")])
    new.write_jwks(path)  # bumps the mtime past the broken version's
    assert (await verifier.verify(new.mint())).kind == "jwt"
    assert await refused(verifier, old_token) == "JWT key id '2024-key' is unknown"


async def test_both_keys_verify_during_an_overlap(tmp_path: Path) -> None:
    both = TestIssuer(keys=[rsa_key("old"), rsa_key("new")])
    verifier = JwtVerifier(auth_settings(both.write_jwks(tmp_path / "jwks.json")))
    assert (await verifier.verify(both.mint(kid="old"))).kind == "jwt"
    assert (await verifier.verify(both.mint(kid="new"))).kind == "jwt"


async def test_a_missing_jwks_file_is_unavailable(tmp_path: Path) -> None:
    verifier = JwtVerifier(auth_settings(tmp_path / "absent.json"))
    with pytest.raises(Unavailable) as info:
        await verifier.verify(TestIssuer().mint())
    assert info.value.message == "JWT keys unavailable: the key set file does not exist"
    with pytest.raises(Unavailable):
        await verifier.load_keys()


@pytest.mark.parametrize("content, reason", [
    ("not json", "the key set is not a JSON object"),
    ('{"keys": []}', "the key set holds no usable signing keys"),
    ('{"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"}]}',
     "the key set holds no usable signing keys"),
    ('[1, 2]', "the key set holds no usable signing keys"),
])
async def test_an_unusable_jwks_file_is_unavailable(tmp_path: Path, content: str,
                                                    reason: str) -> None:
    path = tmp_path / "jwks.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(Unavailable) as info:
        await JwtVerifier(auth_settings(path)).load_keys()
    assert info.value.message == f"JWT keys unavailable: {reason}"


async def test_symmetric_and_encryption_keys_in_the_set_are_ignored(tmp_path: Path,
                                                                    issuer: TestIssuer) -> None:
    document = issuer.jwks()
    document["keys"].append({"kty": "oct", "k": b64(b"s" * 32), "kid": "hmac", "alg": "HS256"})
    document["keys"].append({**issuer.key("rsa-1").public_jwk(), "kid": "enc", "use": "enc"})
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    verifier = JwtVerifier(auth_settings(path))
    assert await verifier.load_keys() == 3
    token = forge({"alg": "HS256", "kid": "hmac"}, issuer.claims())
    assert await refused(verifier, token) == "JWT algorithm 'HS256' is not accepted"
    enc_token = issuer.mint(key=issuer.key("rsa-1"), headers={"kid": "enc"})
    assert await refused(verifier, enc_token) == "JWT key id 'enc' is unknown"


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")
async def test_short_rsa_keys_in_the_set_are_ignored(tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    weak = TestIssuer(keys=[rsa_key("weak", bits=1024), rsa_key("strong")])
    verifier = JwtVerifier(auth_settings(weak.write_jwks(tmp_path / "jwks.json")))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert await verifier.load_keys() == 1
    assert "1024-bit RSA key" in caplog.text
    assert await refused(verifier, weak.mint(kid="weak")) == "JWT key id 'weak' is unknown"
    assert (await verifier.verify(weak.mint(kid="strong"))).kind == "jwt"


async def test_odd_entries_in_the_set_are_skipped(tmp_path: Path, issuer: TestIssuer) -> None:
    good = issuer.key("rsa-1").public_jwk()
    document = {"keys": [
        "not an object", 5, None,
        {**good, "kid": "alg-list", "alg": ["RS256"]},
        {**issuer.key("ec-1").public_jwk(with_alg=False), "kid": "crv-list", "crv": ["P-256"]},
        {"kty": "RSA", "kid": "no-modulus", "e": "AQAB"},
        {"kty": "EC", "kid": "bad-point", "crv": "P-256", "x": "AA", "y": "AA"},
        {"kty": "OKP", "kid": "x448", "crv": "X448", "x": "AA"},
        {**good, "kid": 7},
        good,
    ]}
    path = tmp_path / "jwks.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    verifier = JwtVerifier(auth_settings(path))
    assert await verifier.load_keys() == 1
    assert (await verifier.verify(issuer.mint(kid="rsa-1"))).kind == "jwt"


# --- the key set: a URL ----------------------------------------------------------------------


@dataclass
class JwksServer:
    """A JWKS endpoint on 127.0.0.1 (a thread), answering `status` with `body`."""

    url: str = ""
    status: int = 200
    body: bytes = b""
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def serve(self, document: dict[str, Any]) -> None:
        self.status, self.body = 200, json.dumps(document).encode()


@pytest.fixture
def jwks_server() -> Iterator[JwksServer]:
    state = JwksServer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            with state.lock:
                state.requests += 1
                status, body = state.status, state.body
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/.well-known/jwks.json"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


async def test_jwks_from_a_url_is_fetched_once_and_cached(jwks_server: JwksServer,
                                                          issuer: TestIssuer) -> None:
    jwks_server.serve(issuer.jwks())
    verifier = JwtVerifier(auth_settings(jwks_server.url))
    for kid in ("rsa-1", "ec-1", "ed-1", "rsa-1"):
        assert (await verifier.verify(issuer.mint(kid=kid))).grants == ("acme-*",)
    assert jwks_server.requests == 1


async def test_concurrent_first_tokens_share_one_fetch(jwks_server: JwksServer,
                                                       issuer: TestIssuer) -> None:
    jwks_server.serve(issuer.jwks())
    verifier = JwtVerifier(auth_settings(jwks_server.url))
    tokens = [issuer.mint(kid=kid) for kid in ("rsa-1", "ec-1", "ed-1")] * 5
    principals = await asyncio.gather(*(verifier.verify(t) for t in tokens))
    assert all(p.kind == "jwt" for p in principals)
    assert jwks_server.requests == 1


async def test_an_unknown_kid_refetches_a_url_set_after_the_cooldown(
        jwks_server: JwksServer, monkeypatch: pytest.MonkeyPatch) -> None:
    old = TestIssuer(keys=[rsa_key("old")])
    jwks_server.serve(old.jwks())
    verifier = JwtVerifier(auth_settings(jwks_server.url))
    assert (await verifier.verify(old.mint())).kind == "jwt"

    new = TestIssuer(keys=[rsa_key("new")])
    jwks_server.serve(new.jwks())
    # within the cooldown a stranger's kid does not reach the endpoint
    assert await refused(verifier, new.mint()) == "JWT key id 'new' is unknown"
    assert jwks_server.requests == 1

    monkeypatch.setattr(jwt_tokens, "URL_REFRESH_COOLDOWN_S", 0.0)
    assert (await verifier.verify(new.mint())).kind == "jwt"
    assert jwks_server.requests == 2
    assert await refused(verifier, old.mint()) == "JWT key id 'old' is unknown"


async def test_a_failed_refresh_keeps_the_last_good_url_set(
        jwks_server: JwksServer, issuer: TestIssuer, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    jwks_server.serve(issuer.jwks())
    verifier = JwtVerifier(auth_settings(jwks_server.url))
    assert (await verifier.verify(issuer.mint())).kind == "jwt"
    jwks_server.status, jwks_server.body = 503, b"down"
    monkeypatch.setattr(jwt_tokens, "URL_CACHE_S", 0.0)
    # the set is stale, but the last attempt is within the cooldown: no request yet
    assert (await verifier.verify(issuer.mint())).kind == "jwt"
    assert jwks_server.requests == 1
    monkeypatch.setattr(jwt_tokens, "URL_REFRESH_COOLDOWN_S", 0.0)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert (await verifier.verify(issuer.mint())).kind == "jwt"
    assert jwks_server.requests == 2
    assert "keeping the last good key set" in caplog.text
    jwks_server.serve(issuer.jwks())
    assert (await verifier.verify(issuer.mint())).kind == "jwt"
    assert jwks_server.requests == 3


@pytest.mark.parametrize("status, body, reason", [
    (404, b"not here", "the key set URL answered HTTP 404"),
    (200, b"<html>", "the key set is not a JSON object"),
    (200, b"[1]", "the key set is not a JSON object"),
    (200, b'{"keys": []}', "the key set holds no usable signing keys"),
])
async def test_an_unusable_url_is_unavailable(jwks_server: JwksServer, issuer: TestIssuer,
                                              status: int, body: bytes, reason: str) -> None:
    jwks_server.status, jwks_server.body = status, body
    verifier = JwtVerifier(auth_settings(jwks_server.url))
    with pytest.raises(Unavailable) as info:
        await verifier.verify(issuer.mint())
    assert info.value.message == f"JWT keys unavailable: {reason}"
    assert jwks_server.url not in info.value.message


async def test_an_unreachable_url_is_unavailable_then_recovers(
        jwks_server: JwksServer, issuer: TestIssuer, monkeypatch: pytest.MonkeyPatch) -> None:
    jwks_server.status, jwks_server.body = 500, b""
    verifier = JwtVerifier(auth_settings(jwks_server.url))
    with pytest.raises(Unavailable):
        await verifier.verify(issuer.mint())
    # a failed first fetch is not retried per token...
    with pytest.raises(Unavailable):
        await verifier.verify(issuer.mint())
    assert jwks_server.requests == 1
    # ...but after URL_RETRY_S
    monkeypatch.setattr(jwt_tokens, "URL_RETRY_S", 0.0)
    jwks_server.serve(issuer.jwks())
    assert (await verifier.verify(issuer.mint())).kind == "jwt"
    assert jwks_server.requests == 2


async def test_a_closed_port_is_unavailable() -> None:
    with socket.socket() as sock:  # a port on 127.0.0.1 that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    verifier = JwtVerifier(auth_settings(f"http://127.0.0.1:{port}/jwks.json"))
    with pytest.raises(Unavailable) as info:
        await verifier.load_keys()
    assert info.value.message == "JWT keys unavailable: the key set URL could not be reached"
