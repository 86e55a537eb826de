"""TLS on every hop (recallmesh.shared.tls), with real processes: a leg that requires mutual
TLS refuses plaintext, an unknown CA and a client without a certificate; the gateway dials its
leg over mutual TLS and serves clients that verify it; a rotated certificate is served without
a restart. Certificates are made per test run with `cryptography`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from recallmesh.stack.devcerts import make_ca, make_cert
from recallmesh.stack.supervisor import free_port
from recallmesh.v1 import retriever_pb2, retriever_pb2_grpc
from tests.helpers import api_key, image_healthcheck

pytestmark = pytest.mark.integration

SERVING = health_pb2.HealthCheckResponse.SERVING


@pytest.fixture
def pki(tmp_path: Path) -> dict[str, Path]:
    """The deployment's CA with one certificate for the services, and an unrelated CA."""
    (tmp_path / "good").mkdir()
    (tmp_path / "other").mkdir()
    ca = make_ca(tmp_path / "good", "recallmesh test CA")
    cert, key = make_cert(tmp_path / "good", ca, "recallmesh-service", "service")
    make_ca(tmp_path / "other", "someone else's CA")
    return {"ca": tmp_path / "good" / "ca.pem", "cert": cert, "key": key,
            "other_ca": tmp_path / "other" / "ca.pem", "dir": tmp_path}


def tls_env(pki: dict[str, Path]) -> dict[str, str]:
    return {"RECALLMESH_TLS_CERT": str(pki["cert"]), "RECALLMESH_TLS_KEY": str(pki["key"]),
            "RECALLMESH_TLS_CA": str(pki["ca"])}


class Process:
    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        with open(log, "ab") as out:
            self.popen = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.log = log

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            self.popen.wait(timeout=30)


def serve(service: str, dsn: str, tmp: Path, **env: str) -> tuple[Process, int]:
    port, metrics = free_port(), free_port()
    base = {k: v for k, v in os.environ.items() if not k.startswith("RECALLMESH_")}
    base.update({"RECALLMESH_DSN": dsn, "PYTHONUNBUFFERED": "1",
                 f"RECALLMESH_{service.upper()}_PORT": str(port),
                 f"RECALLMESH_{service.upper()}_METRICS_PORT": str(metrics), **env})
    return Process([sys.executable, "-m", "recallmesh.cli", "serve", service], base,
                   tmp / f"{service}-{port}.log"), port


def credentials(ca: Path, cert: Path | None = None,
                key: Path | None = None) -> grpc.ChannelCredentials:
    return grpc.ssl_channel_credentials(
        root_certificates=ca.read_bytes(),
        private_key=key.read_bytes() if key else None,
        certificate_chain=cert.read_bytes() if cert else None)


def health(port: int, creds: grpc.ChannelCredentials | None = None, service: str = "") -> int:
    """The health status, raising grpc.RpcError when the call cannot be made."""
    address = f"localhost:{port}"
    channel = grpc.secure_channel(address, creds) if creds else grpc.insecure_channel(address)
    with channel:
        status: int = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=service), timeout=3).status
        return status


def wait_serving(port: int, creds: grpc.ChannelCredentials | None, process: Process,
                 timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert process.popen.poll() is None, process.log.read_text()[-3000:]
        try:
            if health(port, creds) == SERVING:
                return
        except grpc.RpcError:
            pass
        time.sleep(0.2)
    pytest.fail("not SERVING over TLS:\n" + process.log.read_text()[-3000:])


@pytest.fixture
def tls_leg(dsn: str, pki: dict[str, Path], tmp_path: Path) -> Iterator[int]:
    leg, port = serve("lexical", dsn, tmp_path, **tls_env(pki))
    try:
        wait_serving(port, credentials(pki["ca"], pki["cert"], pki["key"]), leg)
        yield port
    finally:
        leg.stop()


def refused(call: Callable[[], object]) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as info:
        call()
    return info.value.code()


def test_a_leg_answers_only_mutual_tls_from_the_deployments_ca(tls_leg: int, pki: dict[str, Path],
                                                               ns: str) -> None:
    good = credentials(pki["ca"], pki["cert"], pki["key"])
    assert health(tls_leg, good) == SERVING
    with grpc.secure_channel(f"localhost:{tls_leg}", good) as channel:
        response = retriever_pb2_grpc.RetrieverServiceStub(channel).Search(
            retriever_pb2.SearchRequest(namespace=ns, query="anything", k=5), timeout=10)
        assert list(response.candidates) == []  # answered (an empty namespace)
    # plaintext, an unknown CA, and a verified server but no client certificate: no answer
    assert refused(lambda: health(tls_leg)) == grpc.StatusCode.UNAVAILABLE
    assert refused(lambda: health(tls_leg, credentials(pki["other_ca"]))) == \
        grpc.StatusCode.UNAVAILABLE
    assert refused(lambda: health(tls_leg, credentials(pki["ca"]))) == \
        grpc.StatusCode.UNAVAILABLE


def test_gateway_dials_its_leg_over_mutual_tls_and_serves_verified_clients(
        tls_leg: int, dsn: str, pki: dict[str, Path], ns: str, tmp_path: Path) -> None:
    gateway, port = serve("gateway", dsn, tmp_path, RECALLMESH_LEGS="lexical",
                          RECALLMESH_LEXICAL_TARGET=f"localhost:{tls_leg}",
                          RECALLMESH_FUSION_TARGET="local", **tls_env(pki))
    try:
        # the gateway requires no client certificate (RECALLMESH_TLS_CLIENT_AUTH=internal)
        wait_serving(port, credentials(pki["ca"]), gateway)  # ready: its leg answers it
        env = {k: v for k, v in os.environ.items() if not k.startswith("RECALLMESH_")}
        env.update(RECALLMESH_TLS_CA=str(pki["ca"]), RECALLMESH_TARGET=f"localhost:{port}",
                   RECALLMESH_API_KEY=api_key(dsn))

        def cli(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-m", "recallmesh.cli", *args], env=env,
                                  capture_output=True, text=True, timeout=60)

        stored = cli("store", "-n", ns, "The harbour master's boat is called Petrel")
        assert stored.returncode == 0, stored.stderr
        found = cli("recall", "-n", ns, "harbour master boat", "--json")
        assert found.returncode == 0 and "Petrel" in found.stdout, found.stderr
        assert refused(lambda: health(port)) == grpc.StatusCode.UNAVAILABLE  # plaintext
        env.pop("RECALLMESH_TLS_CA")  # a client that does not speak TLS gets no answer
        plain = cli("recall", "-n", ns, "boat")
        assert plain.returncode == 1 and "UNAVAILABLE" in plain.stderr, plain.stderr
    finally:
        gateway.stop()


def test_the_image_healthcheck_probes_a_mutual_tls_leg(tls_leg: int, pki: dict[str, Path],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # what the exec probe of k8s/components/tls runs: the pod's own settings, over mutual TLS
    check = image_healthcheck().main
    command = ["recallmesh", "serve", "lexical"]
    for name in [k for k in os.environ if k.startswith("RECALLMESH_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("RECALLMESH_LEXICAL_PORT", str(tls_leg))
    assert check(command) == 1  # plaintext: refused
    for name, value in tls_env(pki).items():
        monkeypatch.setenv(name, value)
    assert check(command) == 0  # the certificate's `localhost` name, its own client certificate
    monkeypatch.setenv("RECALLMESH_HEALTHCHECK_SERVER_NAME", "recallmesh-elsewhere")
    assert check(command) == 1  # a name the certificate does not carry: not verified
    monkeypatch.delenv("RECALLMESH_HEALTHCHECK_SERVER_NAME")
    monkeypatch.setenv("RECALLMESH_TLS_CA", str(pki["other_ca"]))
    assert check(command) == 1  # a server the CA did not sign
    assert check(["recallmesh", "migrate"]) == 0  # not a server: healthy


def test_a_rotated_certificate_is_served_without_a_restart(tls_leg: int,
                                                           pki: dict[str, Path]) -> None:
    assert health(tls_leg, credentials(pki["ca"], pki["cert"], pki["key"])) == SERVING
    # rotate to a new CA: the leg's files are overwritten in place (a Secret update)
    new = pki["dir"] / "new"
    new.mkdir()
    ca = make_ca(new, "rotated CA")
    cert, key = make_cert(new, ca, "recallmesh-service", "service")
    time.sleep(0.01)  # a later mtime
    for src, dst in ((new / "ca.pem", pki["ca"]), (cert, pki["cert"]), (key, pki["key"])):
        dst.write_bytes(src.read_bytes())
    assert health(tls_leg, credentials(new / "ca.pem", cert, key)) == SERVING
    assert refused(lambda: health(tls_leg, credentials(pki["other_ca"], cert, key))) == \
        grpc.StatusCode.UNAVAILABLE
