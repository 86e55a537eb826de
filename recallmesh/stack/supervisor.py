"""Start and stop the whole local stack: Postgres, migrations, every service.

Used by `recallmesh up`, the integration tests and the benchmarks, so all of
them run exactly the same processes. Postgres is the embedded one unless
RECALLMESH_DSN is set; each service is its own `python -m` process, started
legs first and gateway last, and is ready when the standard gRPC health check
answers SERVING. Service logs go to <data dir>/logs/<service>.log.

`Stack.watch()` (what `recallmesh up` runs) restarts a service whose process
exits (recallmesh/stack/restarts.py); how a process is stopped and waited for:
recallmesh/stack/processes.py.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import psycopg

from recallmesh.auth.keys import ensure_local_admin_key
from recallmesh.client import Client
from recallmesh.embedding_models.manifest import ModelManifest, default_manifest_path
from recallmesh.migrations import MigrationError
from recallmesh.migrations.vector_schema import VectorSchemaError, prepare_database
from recallmesh.shared.embedded import embedded_dsn, start_embedded
from recallmesh.shared.services import BY_NAME
from recallmesh.shared.settings import (
    LOCAL_KEY_FILE,
    AuthSettings,
    ConfigError,
    ServerConfig,
    configured_dsn,
    data_dir,
    embedded_bm25_index,
)
from recallmesh.shared.tls import TlsSettings
from recallmesh.stack.processes import StackError, describe_exit, log_tail, terminate, wait_serving
from recallmesh.stack.restarts import RestartPolicy, RestartWatcher, StackEvent
from recallmesh.wire.channel import dial_blocking


def free_port() -> int:
    """A TCP port that is free on localhost right now."""
    with socket.socket() as s:
        s.bind(("localhost", 0))
        port: int = s.getsockname()[1]
        return port


def free_port_env() -> dict[str, str]:
    """gRPC (the console and the HTTP/JSON API: HTTP) and metrics ports for every service of
    the stack, all free and all different
    (tests, benchmarks): every socket stays bound until all are chosen, so the kernel cannot
    hand the same port out twice (seen in CI: a gateway's metrics port was the graph leg's
    gRPC port)."""
    env = {}
    with contextlib.ExitStack() as held:
        def port() -> str:
            s = held.enter_context(socket.socket())
            s.bind(("localhost", 0))
            return str(s.getsockname()[1])

        for name in (*BY_NAME, "console", "http"):  # the HTTP fronts' ports too
            env[f"RECALLMESH_{name.upper()}_PORT"] = port()
            env[f"RECALLMESH_{name.upper()}_METRICS_PORT"] = port()
    return env


@dataclass
class Stack:
    """The local stack. `env` overrides os.environ for the child processes."""

    env: dict[str, str] = field(default_factory=dict)
    # Which services to run (default: all of the registry), always in its start order.
    services: tuple[str, ...] | None = None
    wait_for: str = ""  # the health service start() waits for: "" ready, "liveness" up
    dsn: str = ""
    # where the lexical leg's BM25 comes from: "pg_textsearch <version>" or "sql (<why>)"
    # (recallmesh.migrations.bm25_index), set when the database is prepared
    bm25_engine: str = ""
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    endpoints: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, int] = field(default_factory=dict)
    # With authentication on (the default): the local admin key (grants "*", every scope),
    # kept in <data dir>/admin.key, and whether this start created it; the internal token
    # every service of this stack shares (RECALLMESH_INTERNAL_TOKEN, else a fresh one).
    api_key: str = ""
    api_key_created: bool = False
    internal_token: str = ""
    console_url: str = ""  # the web console, when start_console() started it
    http_url: str = ""  # the HTTP/JSON API, when start_http() started it
    _fronts: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    _pg: Any = None
    _watcher: RestartWatcher | None = None
    _lock: threading.RLock = field(default_factory=threading.RLock)
    _start_timeout_s: float = 60.0

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
            self._pg = start_embedded(self.data_dir / "pg", cleanup_mode="stop",
                                      textsearch=embedded_bm25_index(self._environ()))
            dsn = embedded_dsn(self._pg)
        try:
            manifest = ModelManifest.load(self._manifest_path())
            self.bm25_engine = prepare_database(dsn, manifest)
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

        self.internal_token = auth.internal_token or secrets.token_urlsafe(32)
        self.api_key, self.api_key_created = ensure_local_admin_key(
            self.dsn, self.data_dir / LOCAL_KEY_FILE)

    @property
    def tls(self) -> TlsSettings:
        """The TLS settings this stack's services run with (and their callers dial with)."""
        return TlsSettings.from_env(self._environ())

    def dial(self, service: str = "gateway", token: str | None = None) -> grpc.Channel:
        """A blocking channel to one of this stack's services, carrying its credential: the
        local admin key for the gateway, the internal token for the others (or `token`)."""
        if token is None:
            token = self.api_key if service == "gateway" else self.internal_token
        return dial_blocking(self.endpoints[service], tls=self.tls, token=token)

    def client(self, **options: Any) -> Client:
        """The typed client (recallmesh.client) of this stack's gateway, with its local admin
        key and TLS settings; `options` as Client's (namespace=, retry=, timeout=)."""
        return Client(self.endpoints["gateway"], api_key=self.api_key or None, tls=self.tls,
                      **options)

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
        for name in BY_NAME:
            if name != "gateway":
                env.setdefault(
                    f"RECALLMESH_{name.upper()}_TARGET", f"localhost:{self._config(name).port}"
                )
        return env

    def start(self, timeout_s: float = 60.0) -> None:
        self._start_timeout_s = timeout_s
        try:
            self.start_database()
            self._prepare_credentials()
            wanted = set(self.services or BY_NAME)
            unknown = wanted - set(BY_NAME)
            if unknown:
                raise StackError(f"unknown services: {', '.join(sorted(unknown))}")
            for name in BY_NAME:
                if name in wanted:
                    self.start_service(name, timeout_s)
        except BaseException:
            self.stop()
            raise

    def log_path(self, name: str) -> Path:
        return self.data_dir / "logs" / f"{name}.log"

    @property
    def lock(self) -> threading.RLock:
        """Held while `processes` changes (the restart watcher's thread changes it too)."""
        return self._lock

    @property
    def start_timeout_s(self) -> float:
        """How long a service is given to become SERVING (the last start()'s timeout)."""
        return self._start_timeout_s

    def await_serving(self, name: str, process: subprocess.Popen[bytes],
                      timeout_s: float | None = None) -> None:
        """Wait until service `name` (its `process`) is SERVING; StackError if it exits or
        does not within timeout_s (default: start_timeout_s)."""
        wait_serving(f"localhost:{self._config(name).port}",
                     self._start_timeout_s if timeout_s is None else timeout_s, process,
                     self.wait_for, self._environ())

    def spawn(self, name: str) -> subprocess.Popen[bytes]:
        """Start one service process (not waiting for it); its output goes to its log."""
        log_path = self.log_path(name)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log_file:
            process = subprocess.Popen(
                [sys.executable, "-m", BY_NAME[name].module],
                env=self._child_env(),
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        with self._lock:
            self.processes[name] = process
        return process

    def start_service(self, name: str, timeout_s: float = 60.0) -> None:
        """Start one service process and wait until it is SERVING."""
        config = self._config(name)
        log_path = self.log_path(name)
        process = self.spawn(name)
        address = f"localhost:{config.port}"
        try:
            self.await_serving(name, process, timeout_s)
        except StackError as exc:
            raise StackError(
                f"{name} did not start ({exc}); last log lines of {log_path}:\n"
                + log_tail(log_path)
            ) from None
        self.endpoints[name] = address
        self.metrics[name] = config.metrics_port

    def start_console(self, port: int, metrics_port: int = 0, timeout_s: float = 30.0) -> str:
        """Start the web console (`python -m recallmesh.console`) on localhost:`port`, a
        client of this stack's gateway that signs a browser on this machine in with the local
        admin key (docs/console.md); wait until it answers. Its URL; StackError if it did not
        start (the stack serves on without it)."""
        env = {"RECALLMESH_CONSOLE_HOST": self._child_env().get("RECALLMESH_CONSOLE_HOST",
                                                                "127.0.0.1"),
               "RECALLMESH_CONSOLE_PORT": str(port),
               "RECALLMESH_CONSOLE_METRICS_PORT": str(metrics_port)}
        if self.api_key:
            env["RECALLMESH_CONSOLE_AUTO_SIGN_IN_KEY_FILE"] = str(self.data_dir / LOCAL_KEY_FILE)
        self.console_url = self._start_front("console", "recallmesh.console", env, port,
                                             timeout_s)
        return self.console_url

    def stop_console(self, timeout_s: float = 10.0) -> None:
        self._stop_front("console", timeout_s)
        self.console_url = ""

    def start_http(self, port: int, metrics_port: int = 0, timeout_s: float = 30.0) -> str:
        """Start the HTTP/JSON API (`python -m recallmesh.http_api`) on localhost:`port`, a
        front of this stack's gateway that holds no credential (docs/http.md); wait until it
        answers. Its URL; StackError if it did not start (the stack serves on without it)."""
        env = {"RECALLMESH_HTTP_HOST": self._child_env().get("RECALLMESH_HTTP_HOST",
                                                             "127.0.0.1"),
               "RECALLMESH_HTTP_PORT": str(port),
               "RECALLMESH_HTTP_METRICS_PORT": str(metrics_port)}
        self.http_url = self._start_front("http", "recallmesh.http_api", env, port, timeout_s)
        return self.http_url

    def stop_http(self, timeout_s: float = 10.0) -> None:
        self._stop_front("http", timeout_s)
        self.http_url = ""

    def _start_front(self, name: str, module: str, extra: dict[str, str], port: int,
                     timeout_s: float) -> str:
        """Start an HTTP front of the gateway (`python -m module`) and wait until its
        /healthz answers 200; its URL."""
        env = self._child_env()
        env.update(extra, RECALLMESH_TARGET=self.endpoints["gateway"])
        log_path = self.log_path(name)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log_file:
            process = subprocess.Popen([sys.executable, "-m", module], env=env,
                                       stdout=log_file, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        self._fronts[name] = process
        url = f"http://localhost:{port}"
        deadline = time.monotonic() + timeout_s
        while True:
            if process.poll() is not None:
                self._fronts.pop(name, None)
                raise StackError(f"the {name} front exited ({describe_exit(process.returncode)}"
                                 f"); last log lines of {log_path}:\n" + log_tail(log_path))
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=1.0) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self._stop_front(name)
                raise StackError(f"the {name} front did not answer at {url} within "
                                 f"{timeout_s:.0f} s; see {log_path}")
            time.sleep(0.1)
        return url

    def _stop_front(self, name: str, timeout_s: float = 10.0) -> None:
        process = self._fronts.pop(name, None)
        if process is not None:
            terminate(process, timeout_s)

    def stop_service(self, name: str, timeout_s: float = 10.0) -> None:
        """Stop one service process (SIGTERM, then SIGKILL after timeout_s); the restart
        watcher, if any, leaves it stopped."""
        with self._lock:
            if self._watcher is not None:
                self._watcher.forget(name)
            process = self.processes.pop(name, None)
        if process is None:
            return
        terminate(process, timeout_s)
        self.endpoints.pop(name, None)

    def check_alive(self) -> list[str]:
        """Names of services whose process has exited (and that a restart watcher has not
        taken care of yet)."""
        with self._lock:
            return [name for name, p in self.processes.items() if p.poll() is not None]

    def watch(self, policy: RestartPolicy | None = None,
              on_event: Callable[[StackEvent], None] | None = None,
              poll_s: float = 0.1) -> RestartWatcher:
        """From now until stop(): restart a service whose process exits, as `policy` says
        (default: RestartPolicy.from_env over this stack's environment); `on_event` hears of
        each exit, restart and give-up (from the watcher's thread)."""
        if self._watcher is not None:
            raise StackError("the stack is already watched")
        if policy is None:
            try:
                policy = RestartPolicy.from_env(self._environ())
            except ConfigError as exc:
                raise StackError(f"bad configuration: {exc}") from None
        self._watcher = RestartWatcher(self, policy, on_event, poll_s)
        self._watcher.start()
        return self._watcher

    @property
    def watcher(self) -> RestartWatcher | None:
        return self._watcher

    def stop(self, timeout_s: float = 10.0) -> None:
        if self._watcher is not None:  # first, so that what stops now stays stopped
            self._watcher.stop()
            self._watcher = None
        self.stop_console(timeout_s)
        self.stop_http(timeout_s)
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
