"""Start and stop the whole local stack: Postgres, migrations, every service.

Used by `recallmesh up`, the integration tests and the benchmarks, so all of
them run exactly the same processes. Postgres is the embedded one unless
RECALLMESH_DSN is set; each service is its own `python -m` process, started
legs first and gateway last, and is ready when the standard gRPC health check
answers SERVING. Service logs go to <data dir>/logs/<service>.log.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import psycopg
from grpc_health.v1 import health_pb2, health_pb2_grpc

from recallmesh.models.manifest import ModelManifest, default_manifest_path
from recallmesh.platform.config import (
    LOCAL_KEY_FILE,
    AuthSettings,
    ConfigError,
    ServerConfig,
    configured_dsn,
    data_dir,
)
from recallmesh.platform.db import embedded_dsn, start_embedded
from recallmesh.platform.migrations import MigrationError
from recallmesh.platform.tls import TlsSettings, dial_blocking
from recallmesh.platform.vector_schema import VectorSchemaError, prepare_database

# (service name, python module), in start order: the model first, then the
# legs and the indexer, the gateway last.
SERVICES: tuple[tuple[str, str], ...] = (
    ("embedding", "recallmesh.embedding"),
    ("lexical", "recallmesh.legs.lexical"),
    ("vector", "recallmesh.legs.vector"),
    ("indexer", "recallmesh.indexer"),
    ("fusion", "recallmesh.fusion"),
    ("graph", "recallmesh.legs.graph"),
    ("gateway", "recallmesh.gateway"),
)
MODULES = dict(SERVICES)


class StackError(RuntimeError):
    pass


def free_port() -> int:
    """A TCP port that is free on localhost right now."""
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def free_port_env() -> dict[str, str]:
    """gRPC and metrics ports for every service of the stack, all free (tests, benchmarks)."""
    env = {}
    for name, _ in SERVICES:
        env[f"RECALLMESH_{name.upper()}_PORT"] = str(free_port())
        env[f"RECALLMESH_{name.upper()}_METRICS_PORT"] = str(free_port())
    return env


def wait_serving(address: str, timeout_s: float, process: subprocess.Popen | None = None,
                 service: str = "", environ: dict[str, str] | None = None) -> None:
    """Block until the health service at `address` reports `service` SERVING ("": ready;
    "liveness": the process is up, whether or not what it needs is)."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    with dial_blocking(address, settings=TlsSettings.from_env(environ)) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if process is not None and process.poll() is not None:
                raise StackError(f"process exited with code {process.returncode}")
            try:
                status = stub.Check(health_pb2.HealthCheckRequest(service=service),
                                    timeout=1.0).status
                if status == health_pb2.HealthCheckResponse.SERVING:
                    return
                last = health_pb2.HealthCheckResponse.ServingStatus.Name(status)
            except grpc.RpcError as exc:
                last = exc.code().name
            time.sleep(0.1)
    raise StackError(f"{address} not SERVING after {timeout_s:.0f}s (last: {last})")


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@dataclass
class Stack:
    """The local stack. `env` overrides os.environ for the child processes."""

    env: dict[str, str] = field(default_factory=dict)
    # Which services to run (default: all of SERVICES), always in SERVICES order.
    services: tuple[str, ...] | None = None
    wait_for: str = ""  # the health service start() waits for: "" ready, "liveness" up
    dsn: str = ""
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)
    endpoints: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, int] = field(default_factory=dict)
    # With authentication on (the default): the local admin key (grants "*", every scope),
    # kept in <data dir>/admin.key, and whether this start created it; the internal token
    # every service of this stack shares (RECALLMESH_INTERNAL_TOKEN, else a fresh one).
    api_key: str = ""
    api_key_created: bool = False
    internal_token: str = ""
    _pg: Any = None

    def _environ(self) -> dict[str, str]:
        merged = {**os.environ, **self.env}
        merged.setdefault("PYTHONUNBUFFERED", "1")
        return merged

    def _config(self, name: str) -> ServerConfig:
        return ServerConfig.from_env(name, self._environ())

    @property
    def data_dir(self) -> Path:
        raw = self.env.get("RECALLMESH_DATA_DIR")
        return Path(raw).resolve() if raw else data_dir()

    def start_database(self) -> str:
        """Start (or attach to) Postgres and bring the schema up to date; StackError if not."""
        dsn = self.env.get("RECALLMESH_DSN") or configured_dsn()
        if not dsn:
            self._pg = start_embedded(self.data_dir / "pg", cleanup_mode="stop")
            dsn = embedded_dsn(self._pg)
        try:
            manifest = ModelManifest.load(self._manifest_path())
            prepare_database(dsn, manifest)
        except (ConfigError, MigrationError, VectorSchemaError, psycopg.Error) as exc:
            raise StackError(f"database not ready: {exc}") from None
        self.dsn = dsn
        return dsn

    def _prepare_credentials(self) -> None:
        try:
            auth = AuthSettings.from_env(self._environ())
        except ConfigError as exc:
            raise StackError(f"bad configuration: {exc}") from None
        if not auth.required:
            return
        from recallmesh.auth.keys import ensure_local_admin_key

        self.internal_token = auth.internal_token or secrets.token_urlsafe(32)
        self.api_key, self.api_key_created = ensure_local_admin_key(
            self.dsn, self.data_dir / LOCAL_KEY_FILE)

    def dial(self, service: str = "gateway", token: str | None = None) -> grpc.Channel:
        """A blocking channel to one of this stack's services, carrying its credential: the
        local admin key for the gateway, the internal token for the others (or `token`)."""
        if token is None:
            token = self.api_key if service == "gateway" else self.internal_token
        return dial_blocking(self.endpoints[service], settings=TlsSettings.from_env(
            self._environ()), token=token)

    def _manifest_path(self) -> Path:
        """The model manifest, absolute (services run with the repository as cwd)."""
        raw = self.env.get("RECALLMESH_EMBEDDING_MANIFEST")
        return Path(raw).expanduser().resolve() if raw else default_manifest_path()

    def _child_env(self) -> dict[str, str]:
        env = self._environ()
        env["RECALLMESH_DSN"] = self.dsn
        env["RECALLMESH_DATA_DIR"] = str(self.data_dir)
        env["RECALLMESH_EMBEDDING_MANIFEST"] = str(self._manifest_path())
        if self.internal_token:
            env["RECALLMESH_INTERNAL_TOKEN"] = self.internal_token
        for name, _ in SERVICES:
            if name != "gateway":
                env.setdefault(
                    f"RECALLMESH_{name.upper()}_TARGET", f"localhost:{self._config(name).port}"
                )
        return env

    def start(self, timeout_s: float = 60.0) -> None:
        try:
            self.start_database()
            self._prepare_credentials()
            wanted = set(self.services or MODULES)
            unknown = wanted - set(MODULES)
            if unknown:
                raise StackError(f"unknown services: {', '.join(sorted(unknown))}")
            for name, _ in SERVICES:
                if name in wanted:
                    self.start_service(name, timeout_s)
        except BaseException:
            self.stop()
            raise

    def start_service(self, name: str, timeout_s: float = 60.0) -> None:
        """Start one service process and wait until it is SERVING."""
        config = self._config(name)
        logs = self.data_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log_path = logs / f"{name}.log"
        with open(log_path, "ab") as log_file:
            process = subprocess.Popen(
                [sys.executable, "-m", MODULES[name]],
                env=self._child_env(),
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes[name] = process
        address = f"localhost:{config.port}"
        try:
            wait_serving(address, timeout_s, process, self.wait_for, self._environ())
        except StackError as exc:
            raise StackError(
                f"{name} did not start ({exc}); last log lines of {log_path}:\n" + _tail(log_path)
            ) from None
        self.endpoints[name] = address
        self.metrics[name] = config.metrics_port

    def stop_service(self, name: str, timeout_s: float = 10.0) -> None:
        """Stop one service process (SIGTERM, then SIGKILL after timeout_s)."""
        process = self.processes.pop(name, None)
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.endpoints.pop(name, None)

    def check_alive(self) -> list[str]:
        """Names of services whose process has exited."""
        return [name for name, p in self.processes.items() if p.poll() is not None]

    def stop(self, timeout_s: float = 10.0) -> None:
        for name in reversed(list(self.processes)):
            process = self.processes[name]
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()
        if self._pg is not None:
            self._pg.cleanup()
            self._pg = None
