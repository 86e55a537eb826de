"""The local stack's processes: how one is stopped, waited for until it serves, and its exit
and log read for a person (recallmesh/stack/supervisor.py starts them,
recallmesh/stack/restarts.py restarts them)."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from recallmesh.shared.tls import TlsSettings
from recallmesh.wire.channel import dial_blocking


class StackError(RuntimeError):
    pass


def terminate(process: subprocess.Popen[bytes], timeout_s: float) -> None:
    """SIGTERM a process that still runs, SIGKILL it after timeout_s; wait for it."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_serving(address: str, timeout_s: float, process: subprocess.Popen[Any] | None = None,
                 service: str = "", environ: dict[str, str] | None = None) -> None:
    """Block until the health service at `address` reports `service` SERVING ("": ready;
    "liveness": the process is up, whether or not what it needs is)."""
    deadline = time.monotonic() + timeout_s
    last = "no answer"
    with dial_blocking(address, tls=TlsSettings.from_env(environ)) as channel:
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


def log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def describe_exit(code: int) -> str:
    """A process's exit status in words: `exit code 1`, `killed by SIGKILL`."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
