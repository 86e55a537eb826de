"""Authentication and tenant binding through real gRPC against real Postgres: every
credential failure the gateway can meet, namespace grants and scopes checked before the
servicer runs, API key management (RPCs and CLI), and internal services that answer only
internal callers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import grpc
import psycopg
import pytest
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc

from recallmesh.auth.keys import new_key, split_key
from recallmesh.stack.supervisor import Stack, free_port
from recallmesh.v1 import (
    keys_pb2,
    keys_pb2_grpc,
    memory_pb2,
    memory_pb2_grpc,
    retriever_pb2,
    retriever_pb2_grpc,
)
from recallmesh.wire.channel import dial_blocking
from tests.fixtures import stack_env
from tests.helpers import api_key, expect_status, one_row, row_count, store
from tests.jwt_issuer import AUDIENCE, ISSUER, TestIssuer

pytestmark = pytest.mark.integration

UNAUTHENTICATED = grpc.StatusCode.UNAUTHENTICATED
PERMISSION_DENIED = grpc.StatusCode.PERMISSION_DENIED


def stubs(stack: Stack, token: str) -> tuple[grpc.Channel, memory_pb2_grpc.MemoryServiceStub]:
    channel = stack.dial(token=token)
    return channel, memory_pb2_grpc.MemoryServiceStub(channel)


def call_as(stack: Stack, token: str | None, method: str,
            request: Message) -> tuple[grpc.StatusCode, str]:
    """(code, details) of one gateway call carrying `token` (None: no credential at all)."""
    with dial_blocking(stack.endpoints["gateway"], token=token or "") as channel:
        try:
            getattr(memory_pb2_grpc.MemoryServiceStub(channel), method)(request, timeout=10)
        except grpc.RpcError as exc:
            return exc.code(), exc.details()
    return grpc.StatusCode.OK, ""


def raw_call(stack: Stack, metadata: list[tuple[str, str]],
             request: memory_pb2.RecallRequest) -> tuple[grpc.StatusCode, str]:
    with grpc.insecure_channel(stack.endpoints["gateway"]) as channel:
        try:
            memory_pb2_grpc.MemoryServiceStub(channel).Recall(request, timeout=10,
                                                              metadata=metadata)
        except grpc.RpcError as exc:
            return exc.code(), exc.details()
    return grpc.StatusCode.OK, ""


def json_or_none(line: str) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def test_every_credential_failure_is_refused_before_anything_is_written(stack: Stack, dsn: str,
                                                                        db: psycopg.Connection,
                                                                        ns: str) -> None:
    write = memory_pb2.StoreRequest(namespace=ns, memory=memory_pb2.Memory(content="a secret"))
    read = memory_pb2.RecallRequest(namespace=ns, query="secret")
    revoked = api_key(dsn, (ns,))
    with stack.dial() as admin:
        key_id = revoked.split("_")[1]
        keys_pb2_grpc.KeyServiceStub(admin).RevokeApiKey(
            keys_pb2.RevokeApiKeyRequest(id=key_id), timeout=10)
    good = api_key(dsn, (ns,))
    wrong_secret = good[:-6] + ("AAAAAA" if not good.endswith("AAAAAA") else "BBBBBB")
    cases = {
        "none": (None, UNAUTHENTICATED, "missing credential"),
        "malformed": ("rmk_not-a-key", UNAUTHENTICATED, "malformed API key"),
        "not a credential": ("hunter2", UNAUTHENTICATED, "malformed credential"),
        "unknown": (new_key()[0], UNAUTHENTICATED, "unknown API key"),
        "wrong secret": (wrong_secret, UNAUTHENTICATED, "unknown API key"),
        "revoked": (revoked, UNAUTHENTICATED, "API key revoked"),
        "expired": (api_key(dsn, (ns,), expires_at=datetime.now(UTC) - timedelta(seconds=1)),
                    UNAUTHENTICATED, "API key expired"),
        "wrong namespace": (api_key(dsn, (ns + "-other",)), PERMISSION_DENIED,
                            f"not granted namespace {ns!r}"),
        "prefix that does not match": (api_key(dsn, (ns + "x*",)), PERMISSION_DENIED,
                                       "not granted namespace"),
        "wrong scope": (api_key(dsn, (ns,), scopes=("read",)), PERMISSION_DENIED,
                        "lacks the 'write' scope"),
        "JWT not configured": ("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", UNAUTHENTICATED,
                               "JWT bearer tokens are not accepted"),
    }
    before = row_count(db)
    log_path = stack.log_path("gateway")
    log_start = log_path.stat().st_size
    for name, (token, code, words) in cases.items():
        got, details = call_as(stack, token, "Store", write)
        assert (got, words in details) == (code, True), (name, got, details)
        assert token is None or token not in details, name  # never echoed
    assert row_count(db) == before
    # one audit line per refusal (written before the answer is sent), never the secret
    with open(log_path, "rb") as log:
        log.seek(log_start)
        logged = log.read().decode(errors="replace")
    audit = [line for line in map(json_or_none, logged.splitlines())
             if line and line.get("audit") == "refused" and line.get("namespace") == ns]
    assert len(audit) == len(cases), audit
    assert {line["method"] for line in audit} == {"/recallmesh.v1.MemoryService/Store"}
    assert all(line["peer"] and line["level"] == "warning" for line in audit)
    ids = {name: token.split("_")[1] for name, (token, _, _) in cases.items()
              if token and token.startswith("rmk_") and len(token) > 20}
    unknown = [line for line in audit if line["reason"] == "unknown API key"]
    assert {line["key_id"] for line in unknown} == {ids["unknown"], ids["wrong secret"]}
    assert all(line["principal"] == "" and line["code"] == "UNAUTHENTICATED" for line in unknown)
    outside = [line for line in audit if line["key_id"] == ids["wrong namespace"]]
    assert [(line["code"], line["reason"], line["principal"]) for line in outside] == [
        ("PERMISSION_DENIED", f"this credential is not granted namespace {ns!r}",
         f"key:{ids['wrong namespace']} (test)")]
    for token, _, _ in cases.values():
        if token:
            assert token not in logged
            if token.startswith("rmk_") and len(token) > 20:
                assert split_key(token)[1] not in logged  # the secret, never
    # the read-only key reads; the others still cannot
    assert call_as(stack, cases["wrong scope"][0], "Recall", read)[0] == grpc.StatusCode.OK
    assert call_as(stack, revoked, "Recall", read)[0] == UNAUTHENTICATED
    # a malformed header shape, sent raw
    assert raw_call(stack, [("authorization", "Basic Zm9vOmJhcg==")], read)[0] == UNAUTHENTICATED
    assert raw_call(stack, [("authorization", "Bearer")], read)[0] == UNAUTHENTICATED


def test_a_denial_says_nothing_about_other_tenants(stack: Stack,
                                                   gateway: memory_pb2_grpc.MemoryServiceStub,
                                                   dsn: str, ns: str) -> None:
    store(gateway, ns, "Alice's bank PIN is 4921")
    outsider = api_key(dsn, ("elsewhere",))
    request = {n: memory_pb2.RecallRequest(namespace=n, query="PIN") for n in (ns, ns + "-none")}
    taken, free = (call_as(stack, outsider, "Recall", request[n]) for n in (ns, ns + "-none"))
    assert taken[0] == free[0] == PERMISSION_DENIED
    assert taken[1].replace(ns, "N") == free[1].replace(ns + "-none", "N")  # same words


def test_grants_bind_every_rpc_to_its_namespaces(stack: Stack, dsn: str, ns: str) -> None:
    mine, theirs = f"{ns}-team-a", f"{ns}-other"
    token = api_key(dsn, (f"{ns}-team-*",), scopes=("read", "write"))
    channel, stub = stubs(stack, token)
    with channel:
        memory_id = store(stub, mine, "The team meets on Thursdays")
        assert stub.Get(memory_pb2.GetRequest(namespace=mine, id=memory_id), timeout=10)
        requests = {
            "Store": memory_pb2.StoreRequest(namespace=theirs, memory=memory_pb2.Memory(
                content="x")),
            "StoreBatch": memory_pb2.StoreBatchRequest(namespace=theirs, memories=[
                memory_pb2.Memory(content="x")]),
            "Update": memory_pb2.UpdateRequest(namespace=theirs, id=memory_id),
            "Get": memory_pb2.GetRequest(namespace=theirs, id=memory_id),
            "Delete": memory_pb2.DeleteRequest(namespace=theirs, id=memory_id, purge=True),
            "Recall": memory_pb2.RecallRequest(namespace=theirs, query="team"),
        }
        for method, request in requests.items():
            expect_status(PERMISSION_DENIED, getattr(stub, method), request)
        # DeleteNamespace needs admin, even on its own namespace
        expect_status(PERMISSION_DENIED, stub.DeleteNamespace,
                      memory_pb2.DeleteNamespaceRequest(namespace=mine))
        # the namespace is checked as the servicer will read it (NFC, trimmed)
        expect_status(PERMISSION_DENIED, stub.Recall,
                      memory_pb2.RecallRequest(namespace=f"  {theirs} ", query="team"))
        assert stub.Get(memory_pb2.GetRequest(namespace=f" {mine} ", id=memory_id), timeout=10)


def test_key_management_stays_within_the_callers_own_grants(stack: Stack, dsn: str,
                                                            ns: str) -> None:
    team_admin = api_key(dsn, (f"{ns}-*",), scopes=("read", "write", "admin"), name="team")
    with stack.dial(token=team_admin) as channel:
        keys = keys_pb2_grpc.KeyServiceStub(channel)
        created = keys.CreateApiKey(keys_pb2.CreateApiKeyRequest(
            name="reader", namespaces=[f"{ns}-a"], scopes=["read"]), timeout=10)
        assert created.secret.startswith("rmk_") and created.key.id in created.secret
        assert created.key.created_by.startswith("key:")
        for namespaces, scopes in (([f"{ns}*"], ["read"]), (["*"], ["read"]),
                                   ([f"{ns}-a"], ["read", "bogus"]), ([], ["read"])):
            code = (grpc.StatusCode.INVALID_ARGUMENT if "bogus" in scopes or not namespaces
                    else PERMISSION_DENIED)
            expect_status(code, keys.CreateApiKey, keys_pb2.CreateApiKeyRequest(
                name="too broad", namespaces=namespaces, scopes=scopes))
        # the new key works, and only for what it was given
        assert call_as(stack, created.secret, "Recall", memory_pb2.RecallRequest(
            namespace=f"{ns}-a", query="x"))[0] == grpc.StatusCode.OK
        assert call_as(stack, created.secret, "Store", memory_pb2.StoreRequest(
            namespace=f"{ns}-a", memory=memory_pb2.Memory(content="x")))[0] == PERMISSION_DENIED
        listed = keys.ListApiKeys(keys_pb2.ListApiKeysRequest(), timeout=10).keys
        assert created.key.id in [k.id for k in listed]
        assert all(k.namespaces and all(g.startswith(f"{ns}-") for g in k.namespaces)
                   for k in listed)  # never the admin's "*" keys
        assert created.secret not in str(listed)
        assert [k for k in listed if k.id == created.key.id][0].HasField("last_used_at")
        # a key it may not see is NOT_FOUND, like a key that does not exist
        outsider = api_key(dsn, ("elsewhere",)).split("_")[1]
        expect_status(grpc.StatusCode.NOT_FOUND, keys.RevokeApiKey,
                      keys_pb2.RevokeApiKeyRequest(id=outsider))
        revoked = keys.RevokeApiKey(keys_pb2.RevokeApiKeyRequest(id=created.key.id), timeout=10)
        assert revoked.key.HasField("revoked_at")
        code, details = call_as(stack, created.secret, "Recall", memory_pb2.RecallRequest(
            namespace=f"{ns}-a", query="x"))
        assert (code, details) == (UNAUTHENTICATED, "API key revoked")
        assert created.key.id not in [k.id for k in keys.ListApiKeys(
            keys_pb2.ListApiKeysRequest(), timeout=10).keys]
    # a key without admin cannot manage keys at all
    with stack.dial(token=api_key(dsn, (f"{ns}-*",), scopes=("read", "write"))) as channel:
        expect_status(PERMISSION_DENIED, keys_pb2_grpc.KeyServiceStub(channel).ListApiKeys,
                      keys_pb2.ListApiKeysRequest())


def test_keys_in_the_database_are_hashes_only(stack: Stack, db: psycopg.Connection,
                                              ns: str) -> None:
    with stack.dial() as channel:
        created = keys_pb2_grpc.KeyServiceStub(channel).CreateApiKey(
            keys_pb2.CreateApiKeyRequest(name="hash check", namespaces=[ns], scopes=["read"]),
            timeout=10)
    secret = created.secret.split("_", 2)[2]
    row = one_row(db.execute("SELECT row_to_json(k)::text FROM api_keys k WHERE id = %s",
                             (created.key.id,)))[0]
    assert secret not in row and created.secret not in row


def test_internal_services_answer_internal_callers_only(stack: Stack, ns: str) -> None:
    search = retriever_pb2.SearchRequest(namespace=ns, query="anything", k=5)
    log_path = stack.log_path("lexical")
    log_start = log_path.stat().st_size
    for token in ("", "x" * 43, "rmk_" + "0" * 60):
        with grpc.insecure_channel(stack.endpoints["lexical"]) as channel:
            metadata = [("authorization", f"Bearer {token}")] if token else None
            with pytest.raises(grpc.RpcError) as info:
                retriever_pb2_grpc.RetrieverServiceStub(channel).Search(
                    search, timeout=10, metadata=metadata)
            assert info.value.code() == UNAUTHENTICATED
    # not even the admin API key opens a leg
    with stack.dial("lexical", token=stack.api_key) as channel:
        with pytest.raises(grpc.RpcError) as info:
            retriever_pb2_grpc.RetrieverServiceStub(channel).Search(search, timeout=10)
        assert info.value.code() == UNAUTHENTICATED
    with stack.dial("lexical") as channel:  # the internal token
        assert list(retriever_pb2_grpc.RetrieverServiceStub(channel).Search(
            search, timeout=10).candidates) == []
    with open(log_path, "rb") as log:  # an audit line per refusal, without the token
        log.seek(log_start)
        logged = log.read().decode(errors="replace")
    audit = [line for line in map(json_or_none, logged.splitlines())
             if line and line.get("audit") == "refused"]
    assert [(line["code"], line["method"]) for line in audit] == [
        ("UNAUTHENTICATED", "/recallmesh.v1.RetrieverService/Search")] * 4
    assert "x" * 43 not in logged and "0" * 60 not in logged
    assert stack.api_key.rsplit("_", 1)[-1] not in logged
    for name in ("lexical", "vector", "embedding", "fusion", "graph", "indexer", "gateway"):
        with grpc.insecure_channel(stack.endpoints[name]) as channel:  # probes need no key
            assert health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=5).status == \
                health_pb2.HealthCheckResponse.SERVING


def test_an_internal_service_will_not_start_without_a_wall(dsn: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECALLMESH_")}
    env.update(RECALLMESH_DSN=dsn, RECALLMESH_LEXICAL_PORT=str(free_port()),
               RECALLMESH_LEXICAL_METRICS_PORT="0")
    done = subprocess.run([sys.executable, "-m", "recallmesh.cli", "serve", "lexical"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert "RECALLMESH_INTERNAL_TOKEN" in done.stderr and "Traceback" not in done.stderr


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "recallmesh.cli", *args], env=env,
                          capture_output=True, text=True, timeout=60)


def test_keys_cli_creates_lists_and_revokes(stack: Stack, dsn: str, ns: str,
                                            tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECALLMESH_")}
    env.update(RECALLMESH_TARGET=stack.endpoints["gateway"], RECALLMESH_API_KEY=stack.api_key,
               RECALLMESH_DATA_DIR=str(tmp_path), COLUMNS="250")
    made = cli(env, "keys", "create", "--name", "agent", "-n", ns, "--scope", "read,write",
               "--expires-in", "30d")
    assert made.returncode == 0, made.stderr
    key = made.stdout.strip()
    assert key.startswith("rmk_") and "shown once" in made.stderr
    listed = cli(env, "keys", "list", "--json")
    assert listed.returncode == 0 and key.split("_")[1] in listed.stdout, listed.stderr
    assert key.split("_", 2)[2] not in listed.stdout
    # RECALLMESH_API_KEY is what the CLI sends
    as_agent = {**env, "RECALLMESH_API_KEY": key}
    assert cli(as_agent, "store", "-n", ns, "The agent remembers the blue door").returncode == 0
    denied = cli(as_agent, "recall", "-n", ns + "-x", "door")
    assert denied.returncode == 1 and "PERMISSION_DENIED" in denied.stderr
    assert "Traceback" not in denied.stderr
    assert cli(env, "keys", "revoke", key.split("_")[1]).returncode == 0
    gone = cli(as_agent, "recall", "-n", ns, "door")
    assert gone.returncode == 1 and "API key revoked" in gone.stderr
    no_key = cli({**env, "RECALLMESH_API_KEY": ""}, "recall", "-n", ns, "door")
    assert no_key.returncode == 1 and "missing credential" in no_key.stderr
    # --database: the first admin key of a deployment, written straight into Postgres
    boot = cli({**env, "RECALLMESH_DSN": dsn}, "keys", "create", "--database", "--name", "ops",
               "-n", "*", "--scope", "admin")
    assert boot.returncode == 0, boot.stderr
    with stack.dial(token=boot.stdout.strip()) as channel:
        assert keys_pb2_grpc.KeyServiceStub(channel).ListApiKeys(
            keys_pb2.ListApiKeysRequest(), timeout=10).keys


@pytest.fixture(scope="module")
def jwt_gateway(stack: Stack, tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[tuple[Stack, TestIssuer]]:
    """A gateway over the session's services that also accepts JWTs from a test issuer."""
    folder = tmp_path_factory.mktemp("jwt-gateway")
    issuer = TestIssuer()
    issuer.write_jwks(folder / "jwks.json")
    env = stack_env(folder, stack.dsn, RECALLMESH_INTERNAL_TOKEN=stack.internal_token,
                    RECALLMESH_JWT_JWKS=str(folder / "jwks.json"), RECALLMESH_JWT_ISSUER=ISSUER,
                    RECALLMESH_JWT_AUDIENCE=AUDIENCE, RECALLMESH_FUSION_TARGET="local",
                    **{f"RECALLMESH_{n.upper()}_TARGET": stack.endpoints[n]
                       for n in ("lexical", "vector", "embedding")})
    gateway = Stack(env=env, services=("gateway",))
    gateway.start(timeout_s=60)
    yield gateway, issuer
    gateway.stop()


def test_jwt_callers_get_the_namespaces_and_scopes_their_token_lists(
        jwt_gateway: tuple[Stack, TestIssuer], ns: str) -> None:
    gateway, issuer = jwt_gateway
    token = issuer.mint(namespaces=[f"{ns}-*"], scopes="recallmesh:read write openid")
    with gateway.dial(token=token) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        store(stub, f"{ns}-a", "The JWT caller parks on level 3")
        hits = stub.Recall(memory_pb2.RecallRequest(namespace=f"{ns}-a", query="parks level"),
                           timeout=10).hits
        assert hits and "level 3" in hits[0].memory.content
        expect_status(PERMISSION_DENIED, stub.Recall,
                      memory_pb2.RecallRequest(namespace=f"{ns}x", query="parks"))
        expect_status(PERMISSION_DENIED, stub.DeleteNamespace,
                      memory_pb2.DeleteNamespaceRequest(namespace=f"{ns}-a"))
    # API keys keep working on the same gateway
    with gateway.dial() as channel:
        assert memory_pb2_grpc.MemoryServiceStub(channel).Recall(
            memory_pb2.RecallRequest(namespace=f"{ns}-a", query="parks"), timeout=10).hits


def test_every_jwt_failure_is_unauthenticated(jwt_gateway: tuple[Stack, TestIssuer],
                                              ns: str) -> None:
    gateway, issuer = jwt_gateway
    request = memory_pb2.RecallRequest(namespace=f"{ns}-a", query="anything")
    cases = {
        "bad signature": (issuer.untrusted().mint(namespaces=[f"{ns}-*"]),
                          "JWT signature does not verify"),
        "wrong audience": (issuer.mint(namespaces=[f"{ns}-*"], aud="someone-else"),
                           "JWT audience is not"),
        "wrong issuer": (issuer.mint(namespaces=[f"{ns}-*"], iss="https://evil.example/"),
                         "JWT issuer is not"),
        "expired": (issuer.mint(namespaces=[f"{ns}-*"], exp_in_s=-600), "JWT expired"),
        "no namespaces claim": (issuer.mint(namespaces=None), "recallmesh_namespaces"),
        "malformed": ("eyJ.eyJ.x", "malformed JWT"),
    }
    for name, (token, words) in cases.items():
        code, details = call_as(gateway, token, "Recall", request)
        assert code == UNAUTHENTICATED and words in details, (name, code, details)
        assert token not in details
    no_scope = issuer.mint(namespaces=[f"{ns}-*"], scopes="openid")
    assert call_as(gateway, no_scope, "Recall", request)[0] == PERMISSION_DENIED


def test_auth_off_is_explicit_and_open(stack: Stack, ns: str, tmp_path: Path) -> None:
    env = stack_env(tmp_path, stack.dsn, RECALLMESH_AUTH="off",
                    RECALLMESH_INTERNAL_TOKEN=stack.internal_token,
                    RECALLMESH_LEGS="lexical", RECALLMESH_FUSION_TARGET="local",
                    RECALLMESH_LEXICAL_TARGET=stack.endpoints["lexical"])
    gateway = Stack(env=env, services=("gateway",))
    gateway.start(timeout_s=60)
    try:
        assert not gateway.api_key and not (tmp_path / "admin.key").exists()
        assert call_as(gateway, None, "Recall", memory_pb2.RecallRequest(
            namespace=ns, query="x"))[0] == grpc.StatusCode.OK
        assert "authentication is OFF" in (tmp_path / "logs" / "gateway.log").read_text()
    finally:
        gateway.stop()
