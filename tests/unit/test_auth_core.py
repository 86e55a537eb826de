"""The authentication cores without a server: grants and scopes, the bearer header, the key
format, the Authenticator's cache and bookkeeping, and the method table of the gateway."""

from __future__ import annotations

import asyncio
import json
import logging
import string
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from hypothesis import given
from hypothesis import strategies as st

from recallmesh.auth.authenticator import Authenticator, bearer_token, presented_key_id
from recallmesh.auth.interceptors import (
    KEY_SERVICE,
    MEMORY_SERVICE,
    METHOD_SCOPES,
    GatewayAuth,
    InternalOnly,
    internal_guard,
)
from recallmesh.auth.keys import ApiKey, KeyStore, new_key, secret_hash, split_key
from recallmesh.auth.principal import (
    ALL_SCOPES,
    Principal,
    Scope,
    grant_covers,
    grant_matches,
    parse_grant,
    parse_scopes,
)
from recallmesh.shared.errors import (
    InvalidArgument,
    PermissionDenied,
    RequestError,
    Unauthenticated,
)
from recallmesh.shared.logs import JsonFormatter
from recallmesh.shared.settings import AuthSettings, ConfigError
from recallmesh.shared.tls import TlsSettings
from recallmesh.v1 import keys_pb2, memory_pb2

names = st.text(alphabet=string.ascii_lowercase + "-", min_size=1, max_size=8)
grants = st.one_of(names, names.map(lambda n: n + "*"), st.just("*"))


@given(outer=grants, inner=grants, namespace=names)
def test_a_covered_grant_never_reaches_beyond_its_cover(outer: str, inner: str,
                                                        namespace: str) -> None:
    if grant_covers(outer, inner) and grant_matches(inner, namespace):
        assert grant_matches(outer, namespace)


@given(grant=grants)
def test_a_grant_covers_itself(grant: str) -> None:
    assert grant_covers(grant, grant)


def test_prefix_grants_match_by_prefix_only() -> None:
    caller = Principal("t", ("acme-*", "solo"), frozenset({Scope.READ}))
    assert caller.allows("acme-alice") and caller.allows("acme-") and caller.allows("solo")
    assert not caller.allows("acmex") and not caller.allows("solo2") and not caller.allows("s")
    assert caller.covers(["acme-team-*", "acme-bob", "solo"])
    assert not caller.covers(["acme*"]) and not caller.covers(["*"]) and not caller.covers(
        ["solo*"])


def test_require_names_only_what_was_asked() -> None:
    caller = Principal("t", ("acme-*",), frozenset({Scope.READ}))
    caller.require(Scope.READ, "acme-a")
    with pytest.raises(PermissionDenied, match="lacks the 'write' scope"):
        caller.require(Scope.WRITE, "acme-a")
    with pytest.raises(PermissionDenied) as info:
        caller.require(Scope.READ, "other")
    assert info.value.message == "this credential is not granted namespace 'other'"
    assert "acme" not in info.value.message


def test_grants_and_scopes_are_parsed_strictly() -> None:
    assert parse_grant(" acme-* ") == "acme-*" and parse_grant("*") == "*"
    assert parse_grant("Cafe\u0301") == "Caf\u00e9"  # NFC, like a request's namespace
    for bad in ("", "*\u200b", "a\x00b", "  *x*\u202e"):
        with pytest.raises(InvalidArgument):
            parse_grant(bad)
    assert parse_scopes(["READ", "write", ""]) == {Scope.READ, Scope.WRITE}
    with pytest.raises(InvalidArgument, match="unknown scope"):
        parse_scopes(["root"])


@pytest.mark.parametrize("metadata, message", [
    ([], "missing credential"),
    ([("x-other", "1")], "missing credential"),
    ([("authorization", "Basic abc")], "expected 'Bearer"),
    ([("authorization", "Bearer ")], "expected 'Bearer"),
    ([("authorization", "Bearer a"), ("authorization", "Bearer b")], "more than one"),
    ([("authorization", b"Bearer a")], "expected 'Bearer"),
])
def test_bearer_header_problems_are_unauthenticated(metadata: list[tuple[str, str | bytes]],
                                                    message: str) -> None:
    with pytest.raises(Unauthenticated, match=message):
        bearer_token(metadata)


def test_bearer_scheme_is_case_insensitive() -> None:
    assert bearer_token([("Authorization", "bearer  tok ")]) == "tok"


def test_keys_round_trip_and_malformed_keys_are_refused_without_echo() -> None:
    key, key_id, digest = new_key()
    assert split_key(key) == (key_id, key[len("rmk_") + 17:])
    assert secret_hash(split_key(key)[1]) == digest
    for bad in ("rmk_", "rmk_xyz_abc", key[:-1], key + "x", key.replace("rmk_", "rmx_")):
        with pytest.raises(Unauthenticated) as info:
            split_key(bad)
        assert len(bad) < 12 or bad not in info.value.message


class FakeKeys(KeyStore):
    """KeyStore's lookup/touch over a dict (the SQL is covered by the integration tests)."""

    def __init__(self) -> None:  # no pool: lookup and touch below never reach one
        self.rows: dict[str, tuple[ApiKey, bytes]] = {}
        self.lookups = 0
        self.touched: list[str] = []

    def add(self, expires_at: datetime | None = None) -> str:
        key, key_id, digest = new_key()
        self.rows[key_id] = (ApiKey(key_id, "k", ("ns",), frozenset({Scope.READ}),
                                    datetime.now(UTC), expires_at=expires_at), digest)
        return key

    async def lookup(self, key_id: str) -> tuple[ApiKey, bytes] | None:
        self.lookups += 1
        return self.rows.get(key_id)

    async def touch(self, key_id: str) -> None:
        self.touched.append(key_id)


def bearer(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


def test_authenticator_caches_keys_for_the_configured_time_and_sees_revocation_after() -> None:
    async def scenario() -> None:
        now = [0.0]
        keys = FakeKeys()
        token = keys.add()
        auth = Authenticator(AuthSettings(key_cache_s=5), keys, clock=lambda: now[0])
        principal = await auth.authenticate(bearer(token))
        assert principal.grants == ("ns",) and principal.kind == "api_key"
        await auth.authenticate(bearer(token))
        assert keys.lookups == 1  # cached
        key_id = split_key(token)[0]
        key, digest = keys.rows[key_id]
        keys.rows[key_id] = (ApiKey(**{**key.__dict__, "revoked_at": datetime.now(UTC)}), digest)
        now[0] = 5.1
        with pytest.raises(Unauthenticated, match="API key revoked"):
            await auth.authenticate(bearer(token))
        wrong = token[:-4] + ("aaaa" if not token.endswith("aaaa") else "bbbb")
        with pytest.raises(Unauthenticated, match="unknown API key"):
            await auth.authenticate(bearer(wrong))
        await asyncio.sleep(0)
        assert keys.touched == [key_id]  # once, not per call

    asyncio.run(scenario())


def test_authenticator_refuses_expired_unknown_and_unconfigured_jwt() -> None:
    async def scenario() -> None:
        keys = FakeKeys()
        expired = keys.add(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        auth = Authenticator(AuthSettings(), keys)
        with pytest.raises(Unauthenticated, match="API key expired"):
            await auth.authenticate(bearer(expired))
        with pytest.raises(Unauthenticated, match="unknown API key"):
            await auth.authenticate(bearer(new_key()[0]))
        with pytest.raises(Unauthenticated, match="not accepted here"):
            await auth.authenticate(bearer("eyJ.eyJ.sig"))
        with pytest.raises(Unauthenticated, match="neither an API key"):
            await auth.authenticate(bearer("hunter2"))
        off = Authenticator(AuthSettings(mode="off"), None)
        assert (await off.authenticate([])).scopes == ALL_SCOPES

    asyncio.run(scenario())


def test_every_public_method_has_a_scope() -> None:
    listed: set[str] = set()
    for module, service in ((memory_pb2, "MemoryService"), (keys_pb2, "KeyService")):
        desc = module.DESCRIPTOR.services_by_name[service]
        listed |= {f"/{desc.full_name}/{m.name}" for m in desc.methods}
    assert listed == set(METHOD_SCOPES)


def test_an_internal_service_needs_a_wall_when_authentication_is_on(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="RECALLMESH_INTERNAL_TOKEN"):
        internal_guard("lexical", AuthSettings(), TlsSettings())
    assert internal_guard("gateway", AuthSettings(), TlsSettings()) is None
    assert internal_guard("lexical", AuthSettings(mode="off"), TlsSettings()) is None
    assert internal_guard("lexical", AuthSettings(internal_token="x" * 32), TlsSettings())
    cert = tmp_path / "c.pem"
    cert.write_text("x")
    assert internal_guard("lexical", AuthSettings(), TlsSettings(cert, cert, cert)) is None
    with pytest.raises(ConfigError):  # TLS without client certificates is no wall
        internal_guard("lexical", AuthSettings(),
                       TlsSettings(cert, cert, cert, client_auth="none"))


def test_auth_settings_are_checked() -> None:
    assert AuthSettings.from_env({}).required
    with pytest.raises(ConfigError, match="RECALLMESH_AUTH"):
        AuthSettings.from_env({"RECALLMESH_AUTH": "maybe"})
    with pytest.raises(ConfigError, match="at least 32"):
        AuthSettings.from_env({"RECALLMESH_INTERNAL_TOKEN": "short"})
    with pytest.raises(ConfigError, match="ISSUER"):
        AuthSettings.from_env({"RECALLMESH_JWT_JWKS": "/x.json"})


# The audit line of a refused call: the interceptors with a fake call context.

PEER = "ipv4:10.1.2.3:50412"
RECALL = f"/{MEMORY_SERVICE}/Recall"


Metadata = list[tuple[str, str]]


class FakeContext:
    def __init__(self, metadata: Metadata) -> None:
        self.metadata = metadata

    def invocation_metadata(self) -> Metadata:
        return self.metadata

    def peer(self) -> str:
        return PEER

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise AssertionError(f"aborted with {code}: {details}")


class Details:
    def __init__(self, method: str, metadata: Metadata | None = None) -> None:
        self.method = method
        self.invocation_metadata = metadata


Behavior = Callable[[Any, FakeContext], Awaitable[str]]


async def call_through(interceptor: GatewayAuth | InternalOnly, method: str,
                       request: Message | None, metadata: Metadata,
                       behavior: Behavior | None = None) -> str | RequestError:
    """One unary call of `method` through `interceptor`: the servicer's answer, or the
    RequestError the interceptor (or the servicer) raised."""
    async def answer(request: Message | None, context: FakeContext) -> str:
        return "answered"

    async def continuation(details: Details) -> grpc.RpcMethodHandler:
        return grpc.unary_unary_rpc_method_handler(behavior or answer)

    handler = await interceptor.intercept_service(continuation, Details(method, metadata))
    try:
        answered: str = await handler.unary_unary(request, FakeContext(metadata))
        return answered
    except RequestError as exc:
        return exc


def audit_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, str]]:
    """The audit lines logged, as the JSON log lines they become (recallmesh.shared.logs)."""
    formatter = JsonFormatter("gateway")
    return [json.loads(formatter.format(r)) for r in caplog.records
            if getattr(r, "audit", None) == "refused"]


def test_every_refusal_of_the_gateway_writes_one_audit_line_without_the_secret(
        caplog: pytest.LogCaptureFixture) -> None:
    keys = FakeKeys()
    good = keys.add()
    key_id, secret = split_key(good)
    wrong = good[:-4] + ("aaaa" if not good.endswith("aaaa") else "bbbb")
    auth = GatewayAuth(Authenticator(AuthSettings(), keys))
    recall = memory_pb2.RecallRequest(namespace="ns", query="q")
    elsewhere = memory_pb2.RecallRequest(namespace="other-tenant", query="q")

    async def scenario() -> list[str | RequestError]:
        assert await call_through(auth, RECALL, recall, bearer(good)) == "answered"
        outcomes = [
            await call_through(auth, RECALL, recall, bearer(wrong)),
            await call_through(auth, RECALL, elsewhere, bearer(good)),
            await call_through(auth, RECALL, recall, []),
            await call_through(auth, f"/{MEMORY_SERVICE}/Store",
                               memory_pb2.StoreRequest(namespace="ns"), bearer(good)),
        ]
        return outcomes

    with caplog.at_level(logging.WARNING, logger="recallmesh.auth.interceptors"):
        outcomes = asyncio.run(scenario())
    assert [type(o) for o in outcomes] == [Unauthenticated, PermissionDenied, Unauthenticated,
                                           PermissionDenied]
    lines = audit_lines(caplog)
    assert len(lines) == 4  # one per refusal, none for the call that was answered
    missing_credential = outcomes[2]
    assert isinstance(missing_credential, Unauthenticated)
    common = {"level": "warning", "msg": "call refused", "audit": "refused", "peer": PEER,
              "logger": "recallmesh.auth.interceptors", "subject": ""}
    principal = f"key:{key_id} (k)"
    expected = [
        {"code": "UNAUTHENTICATED", "method": RECALL, "namespace": "ns",
         "reason": "unknown API key", "key_id": key_id, "principal": ""},
        {"code": "PERMISSION_DENIED", "method": RECALL, "namespace": "other-tenant",
         "reason": "this credential is not granted namespace 'other-tenant'",
         "key_id": key_id, "principal": principal},
        {"code": "UNAUTHENTICATED", "method": RECALL, "namespace": "ns",
         "reason": missing_credential.message, "key_id": "", "principal": ""},
        {"code": "PERMISSION_DENIED", "method": f"/{MEMORY_SERVICE}/Store", "namespace": "ns",
         "reason": "this credential lacks the 'write' scope", "key_id": key_id,
         "principal": principal},
    ]
    for line, fields in zip(lines, expected, strict=True):
        assert {k: line[k] for k in (*common, *fields)} == {**common, **fields}
    text = caplog.text + "".join(json.dumps(line) for line in lines)
    for secretive in (secret, wrong.rsplit("_", 1)[1], good, wrong):
        assert secretive not in text


def test_audit_names_a_jwt_subject_and_the_servicers_own_refusals(
        caplog: pytest.LogCaptureFixture) -> None:
    class JwtCaller(Authenticator):
        def __init__(self) -> None:  # no settings, no keys: every caller is this JWT's
            pass

        async def authenticate(self, metadata: Iterable[tuple[str, Any]] | None) -> Principal:
            return Principal("jwt:alice@example.com", ("team-*",), frozenset({Scope.ADMIN}),
                             kind="jwt")

    async def refuse_broader_key(request: Message | None, context: FakeContext) -> str:
        raise PermissionDenied("a new key's namespaces must be within this credential's")

    auth = GatewayAuth(JwtCaller())
    token = bearer("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl")

    async def scenario() -> list[str | RequestError]:
        return [
            await call_through(auth, RECALL, memory_pb2.RecallRequest(namespace="team-a"),
                               token),
            await call_through(auth, f"/{KEY_SERVICE}/CreateApiKey",
                               keys_pb2.CreateApiKeyRequest(name="n", namespaces=["*"]), token,
                               behavior=refuse_broader_key),
        ]

    with caplog.at_level(logging.WARNING, logger="recallmesh.auth.interceptors"):
        outcomes = asyncio.run(scenario())
    assert [o.code if isinstance(o, RequestError) else o for o in outcomes] == [
        "PERMISSION_DENIED", "PERMISSION_DENIED"]
    scope, servicer = audit_lines(caplog)
    assert (scope["subject"], scope["principal"], scope["key_id"], scope["namespace"]) == (
        "alice@example.com", "jwt:alice@example.com", "", "team-a")
    assert scope["reason"] == "this credential lacks the 'read' scope"
    assert (servicer["method"], servicer["namespace"], servicer["subject"]) == (
        f"/{KEY_SERVICE}/CreateApiKey", "", "alice@example.com")
    assert servicer["reason"] == "a new key's namespaces must be within this credential's"
    assert "c2lnbmF0dXJl" not in caplog.text


def test_an_internal_service_audits_the_calls_it_refuses(caplog: pytest.LogCaptureFixture) -> None:
    wall = InternalOnly("t" * 32)
    search = "/recallmesh.v1.RetrieverService/Search"

    async def scenario() -> list[str | RequestError]:
        return [await call_through(wall, search, None, bearer("guess-" + "x" * 30)),
                await call_through(wall, search, None, bearer("t" * 32))]

    with caplog.at_level(logging.WARNING, logger="recallmesh.auth.interceptors"):
        refused, answered = asyncio.run(scenario())
    assert isinstance(refused, Unauthenticated) and answered == "answered"
    (line,) = audit_lines(caplog)
    assert (line["code"], line["method"], line["peer"], line["key_id"]) == (
        "UNAUTHENTICATED", search, PEER, "")
    assert "guess-" not in caplog.text and "t" * 32 not in caplog.text


def test_presented_key_id_is_the_id_of_a_well_formed_key_only() -> None:
    key, key_id, _ = new_key()
    assert presented_key_id(bearer(key)) == key_id
    for other in (bearer("rmk_not-a-key"), bearer("eyJ.eyJ.sig"), bearer("hunter2"), [], None):
        assert presented_key_id(other) == ""


def test_a_writer_is_named_by_its_key_id_its_subject_or_local() -> None:
    """memories.written_by (issue 65): an API key by its public id (a name can be reused), a
    JWT by its subject, authentication off as `local`; a writer without read is told of its own
    memories only."""
    from recallmesh.auth.principal import UNAUTHENTICATED_LOCAL, Principal, Scope
    from recallmesh.gateway.write_keys import Writer

    key = Principal("ingest", ("acme-*",), frozenset({Scope.WRITE}), key_id="0123456789abcdef")
    jwt = Principal("svc@acme", ("acme-*",), frozenset({Scope.WRITE}), kind="jwt")
    assert key.writer == "api_key:0123456789abcdef"
    assert jwt.writer == "jwt:svc@acme"
    assert UNAUTHENTICATED_LOCAL.writer == "local"
    blind = Writer(key.writer, may_read=False)
    assert blind.told_of(key.writer) and not blind.told_of(jwt.writer)
    assert not blind.told_of(None)  # written before migration 0018
    assert Writer(jwt.writer, may_read=True).told_of(key.writer)
