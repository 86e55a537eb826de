"""What the benchmark scripts share around their measurements: comma-separated arguments
(`--configs a,b`, `--sizes 5000,100000`), a timed stack start, channels to a running service
that carry its credential, the RECALLMESH_* settings a report records (credentials masked),
and the machine description their reports print.

Authentication is on by default, so every channel a benchmark dials carries a credential: to
a stack it started, `stack.dial(service)` (the stack's local admin key for the gateway, its
internal token for the others); to a service given on the command line (`--target`),
`dial_gateway` (an API key: RECALLMESH_API_KEY, else the local admin key file of
`recallmesh up`) or `dial_internal` (RECALLMESH_INTERNAL_TOKEN)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any, TypeVar

import grpc

from recallmesh.client import NO_RETRIES, Client
from recallmesh.shared.credentials import client_api_key, internal_token
from recallmesh.stack.processes import StackError
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.wire.channel import dial_blocking

T = TypeVar("T")


def log(message: str) -> None:
    """A timestamped progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def comma_list(raw: str, item: Callable[[str], T] = str) -> list[T]:
    """"a, b,,c" -> [item("a"), item("b"), item("c")]: blanks dropped, each item converted.
    Raises argparse.ArgumentTypeError (a usage error, as an argparse `type`) when nothing is
    left or an item does not convert."""
    try:
        values = [item(x.strip()) for x in raw.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list; got {raw!r}") from None
    if not values:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list; got {raw!r}")
    return values


def names(raw: str) -> list[str]:
    """An argparse type: a comma-separated list of names."""
    return comma_list(raw)


def paths(raw: str) -> list[Path]:
    """An argparse type: a comma-separated list of paths."""
    return comma_list(raw, Path)


def pools_parser(prog: str, doc: str | None) -> argparse.ArgumentParser:
    """The options every replay over candidate pools takes: --pools, --json-to, --report-to."""
    parser = argparse.ArgumentParser(prog=prog, description=(doc or "").split("\n\n")[0])
    parser.add_argument("--pools", type=paths, required=True, help="comma-separated pools")
    parser.add_argument("--json-to", type=Path)
    parser.add_argument("--report-to", type=Path)
    return parser


def positive_ints(raw: str) -> list[int]:
    """An argparse type: a comma-separated list of integers, each at least 1."""
    values = comma_list(raw, int)
    if any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {raw!r}")
    return values


# Settings every benchmark stack runs with. The embedding service's query-vector cache is off:
# a benchmark cycles a fixed list of questions, and every configuration and peer of a run asks
# the same ones, so with the cache on the second time a question is asked would time a cache
# hit, not the model (the first configuration of a run would pay for the others). Real agents
# do repeat themselves; what the cache saves is measured on its own.
#
# Memories' vectors come from the on-disk vector store (benchmarks/harness/vector_prefill.py;
# RECALLMESH_EMBEDDING_VECTOR_STORE in the environment names another folder): a text a
# benchmark stored before is not embedded again, so a load costs minutes, and a load's rows
# are the model's (tests/integration/test_vector_store.py). Only documents: every recall's
# query is embedded by the model, so latencies include it.
VECTOR_STORE = Path(__file__).resolve().parents[1] / "results" / "vectors"
BENCH_ENV = {
    "RECALLMESH_EMBEDDING_QUERY_CACHE_MB": "0",
    "RECALLMESH_EMBEDDING_VECTOR_STORE": os.environ.get("RECALLMESH_EMBEDDING_VECTOR_STORE",
                                                        str(VECTOR_STORE)),
    "RECALLMESH_EMBEDDING_VECTOR_STORE_KINDS": os.environ.get(
        "RECALLMESH_EMBEDDING_VECTOR_STORE_KINDS", "document"),
}


def publish(text: str, report_to: Path | None = None, json_to: Path | None = None,
            data: Any = None, indent: int = 2, end: str = "\n") -> None:
    """A benchmark's output: the markdown report printed, and written to `report_to`; `data`
    written as JSON to `json_to` (each only when given)."""
    print(text, end=end)
    if report_to:
        report_to.write_text(text)
    if json_to:
        json_to.write_text(json.dumps(data, indent=indent) + "\n")


def start_stack(stack: Stack) -> float:
    """Start `stack` and return the seconds it took; a stack that does not start ends the
    script with its error."""
    started = time.perf_counter()
    try:
        stack.start()
    except StackError as exc:
        raise SystemExit(f"error: the stack did not start: {exc}") from None
    return time.perf_counter() - started


def gateway_client(stack: Stack | None = None, target: str | None = None,
                   api_key: str | None = None) -> Client:
    """The typed client (recallmesh.client) of `stack`'s gateway, or of a running gateway at
    `target` (its key: `api_key`, else RECALLMESH_API_KEY, else the local admin key file), as
    an agent calls it; without retries, so that a benchmark counts every failure."""
    if stack is not None:
        return stack.client(retry=NO_RETRIES)
    return Client(target, api_key=api_key, retry=NO_RETRIES)


@contextlib.contextmanager
def gateway_of_own_stack(prefix: str) -> Iterator[Client]:
    """A whole stack of its own (the deployment's defaults, BENCH_ENV, free ports, data in a
    temporary folder), started, and the typed client of its gateway; stopped at the end."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        stack = Stack(env={**BENCH_ENV, "RECALLMESH_DATA_DIR": tmp, **free_port_env()})
        start_stack(stack)
        try:
            with gateway_client(stack) as client:
                yield client
        finally:
            stack.stop()


def dial_gateway(target: str, api_key: str | None = None) -> grpc.Channel:
    """A blocking channel to a running gateway, every call carrying `api_key` (default:
    RECALLMESH_API_KEY, else the local admin key file); TLS when RECALLMESH_TLS_* says so."""
    return dial_blocking(target, token=client_api_key() if api_key is None else api_key)


def dial_internal(target: str, token: str | None = None) -> grpc.Channel:
    """The same to a running internal service (a leg, the embedding service), carrying
    `token` (default: RECALLMESH_INTERNAL_TOKEN)."""
    return dial_blocking(target, token=internal_token() if token is None else token)


# Variables whose values a report must never hold.
CREDENTIALS = ("RECALLMESH_API_KEY", "RECALLMESH_INTERNAL_TOKEN")


def recallmesh_env(prefix: str = "RECALLMESH_") -> dict[str, str]:
    """The environment's variables starting with `prefix`, as a report records them: the
    credentials' values masked."""
    return {k: "***" if k in CREDENTIALS else v
            for k, v in os.environ.items() if k.startswith(prefix)}


def onnxruntime_version() -> str:
    for dist in ("onnxruntime", "onnxruntime-gpu"):
        try:
            return f"{dist} {metadata.version(dist)}"
        except metadata.PackageNotFoundError:
            continue
    return "not installed"


def machine_info() -> dict[str, Any]:
    """The machine a measurement ran on, as the performance reports print it."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable = os.cpu_count()
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or "unknown",
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "python": platform.python_version(),
        "onnxruntime": onnxruntime_version(),
    }
