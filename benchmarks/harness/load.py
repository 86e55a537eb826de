"""What the load benchmarks (`python -m benchmarks overload`, `... soak`) share: asyncio
gateway clients
that record every call's status code, latency and shedding hint; window summaries; the check
that every acknowledged write can be read back; and samples of the stack's processes (resident
memory, CPU) and of its Postgres connections.

All clients run as coroutines in one asyncio loop over grpc.aio channels that carry the stack's
credential, so hundreds of concurrent clients cost the benchmark one thread rather than hundreds.
A call's outcome is its gRPC status code by name ("OK", "RESOURCE_EXHAUSTED", ...), whatever
comes back; shedding is RESOURCE_EXHAUSTED, and its `grpc-retry-pushback-ms` trailing metadata
(the server's retry hint) is recorded when present.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.harness.script import BENCH_ENV
from benchmarks.harness.stats import percentile
from recallmesh.client.errors import from_rpc_error
from recallmesh.stack.restarts import RestartWatcher, StackEvent
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from recallmesh.wire.channel import dial

SHED = "RESOURCE_EXHAUSTED"
OK = "OK"
# Why a recall was UNAVAILABLE, read from the start of its status details (the gateway's
# messages, recallmesh/gateway/recall.py and recallmesh/shared/errors.py).
UNAVAILABLE_CAUSES = (
    ("database did not answer", "database late"),  # the reads after the legs ran out of time
    ("no retrieval leg answered", "no leg answered"),
    ("database unavailable", "database unavailable"),  # a refused or lost connection
)


def unavailable_cause(detail: str) -> str:
    """The cause of a recall's UNAVAILABLE, by its details: one of UNAVAILABLE_CAUSES, or
    "other"."""
    return next((cause for prefix, cause in UNAVAILABLE_CAUSES if detail.startswith(prefix)),
                "other")
# Codes that say "the server failed" rather than "the server refused or was unreachable".
SERVER_FAULTS = ("INTERNAL", "UNKNOWN")


def dial_stack(stack: Stack, service: str = "gateway") -> grpc.aio.Channel:
    """An asyncio channel to one of `stack`'s services carrying the credential `stack.dial`
    sends (the local admin key for the gateway, the internal token for the others); TLS when
    the stack's settings say so."""
    token = stack.api_key if service == "gateway" else stack.internal_token
    return dial(stack.endpoints[service], tls=stack.tls, token=token)


def supervise(stack: Stack) -> RestartWatcher:
    """Watch the stack as `recallmesh up` does (a service whose process exits is restarted, by
    the RECALLMESH_RESTART_* policy, while the others keep serving); each event printed."""

    def say(event: StackEvent) -> None:
        print(f"  supervisor: {event.message}", flush=True)

    return stack.watch(on_event=say)


STORE_TEXTS = 3000  # further real texts the stores of a load run cycle through


@dataclass
class LoadedStack:
    """A stack of its own with the memories loaded: what a load run (overload, soak) starts
    from."""

    stack: Stack
    watcher: RestartWatcher
    memories: int  # how many were loaded
    store_texts: list[str]  # further texts for the run's stores
    queries: list[str]
    startup_s: float
    load_s: float


@contextlib.contextmanager
def loaded_stack(name: str, datasets: Path, memories: int,
                 env: dict[str, str] | None = None) -> Iterator[LoadedStack]:
    """Start a stack of its own (restarted like `recallmesh up` restarts it; `env`: settings
    of its own), load `memories` real texts, warm it up with 30 recalls; stopped on the way
    out."""
    from benchmarks.harness.script import start_stack
    from benchmarks.performance.gateway_recall import NAMESPACE, load, read_queries, read_texts

    texts = read_texts(datasets, memories + STORE_TEXTS)
    loaded, store_texts = texts[:memories], texts[memories:]
    queries = read_queries(datasets, 2000)
    with tempfile.TemporaryDirectory(prefix=f"recallmesh-{name}-") as tmp:
        stack = Stack(env={**BENCH_ENV, **(env or {}), "RECALLMESH_DATA_DIR": tmp,
                           **free_port_env()})
        try:
            startup_s = start_stack(stack)
            watcher = supervise(stack)
            with stack.client() as client, stack.dial() as channel:
                stub = memory_pb2_grpc.MemoryServiceStub(channel)
                print(f"loading {len(loaded)} memories ...", flush=True)
                load_s = load(client, loaded)
                for q in queries[:30]:  # warm-up
                    stub.Recall(memory_pb2.RecallRequest(namespace=NAMESPACE, query=q),
                                timeout=30)
            yield LoadedStack(stack, watcher, len(loaded), store_texts, queries, startup_s,
                              load_s)
        finally:
            stack.stop()


def supervisor_summary(watcher: RestartWatcher) -> dict[str, Any]:
    """What the watcher saw during a run: restarts per service, services given up, events."""
    return {"restarts": dict(watcher.restarts), "given_up": list(watcher.given_up),
            "events": [f"{e.kind}: {e.message}" for e in watcher.events]}


def supervisor_text(summary: dict[str, Any]) -> str:
    """"" when nothing exited; else a report sentence."""
    if not summary["events"]:
        return ""
    restarts = codes_text(summary["restarts"])
    given_up = ", ".join(summary["given_up"]) or "none"
    return (f"Service processes exited during the run and were handled by the supervisor: "
            f"restarts {restarts}; given up: {given_up}. Events: "
            + "; ".join(summary["events"]) + ".")


class Gateway:
    """A pool of `channels` asyncio channels to the stack's gateway; client i uses channel
    i mod channels (so 500 clients over 100 channels share each connection five ways)."""

    def __init__(self, stack: Stack, channels: int) -> None:
        self.channels = [dial_stack(stack) for _ in range(max(1, channels))]
        self.stubs = [memory_pb2_grpc.MemoryServiceStub(c) for c in self.channels]

    def stub(self, client: int) -> memory_pb2_grpc.MemoryServiceStub:
        return self.stubs[client % len(self.stubs)]

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self.channels))


@dataclass
class Outcome:
    op: str  # recall | store | delete | get
    code: str  # the gRPC status code's name
    started: float  # time.monotonic()
    finished: float
    degraded: bool = False  # a recall answered without every leg
    pushback_ms: int | None = None  # the server's retry hint on a refusal, when it sent one
    detail: str = ""  # the status details of a failed call

    @property
    def latency_ms(self) -> float:
        return (self.finished - self.started) * 1000


def pushback_ms(error: grpc.aio.AioRpcError) -> int | None:
    """The `grpc-retry-pushback-ms` trailing metadata of a failed call, as the client reads
    it (RecallmeshError.retry_after_ms); None when absent or not an integer (gRPC: a negative
    value means "do not retry")."""
    return from_rpc_error(error).retry_after_ms


async def invoke(op: str, method: Any, request: Any, timeout_s: float) -> tuple[Outcome, Any]:
    """Call `method(request)` with a deadline of `timeout_s`; the outcome, and the response
    (None unless OK). Every status code is an outcome, never an exception."""
    started = time.monotonic()
    try:
        response = await method(request, timeout=timeout_s)
    except grpc.aio.AioRpcError as error:
        code = error.code().name
        return Outcome(op, code, started, time.monotonic(),
                       pushback_ms=pushback_ms(error) if code == SHED else None,
                       detail=(error.details() or "")[:200]), None
    return Outcome(op, OK, started, time.monotonic(),
                   degraded=bool(getattr(response, "degraded", False))), response


async def recall(stub: Any, namespace: str, query: str, timeout_s: float) -> Outcome:
    outcome, _ = await invoke("recall", stub.Recall, memory_pb2.RecallRequest(
        namespace=namespace, query=query, k=10), timeout_s)
    return outcome


async def store(stub: Any, namespace: str, text: str, timeout_s: float) -> tuple[Outcome, str]:
    """A Store without an index wait (the acknowledgement is the committed write); the new
    memory's id when acknowledged, else ""."""
    outcome, response = await invoke("store", stub.Store, memory_pb2.StoreRequest(
        namespace=namespace, memory=memory_pb2.Memory(content=text)), timeout_s)
    return outcome, response.memory.id if response is not None else ""


async def delete(stub: Any, namespace: str, memory_id: str, timeout_s: float) -> Outcome:
    outcome, _ = await invoke("delete", stub.Delete, memory_pb2.DeleteRequest(
        namespace=namespace, id=memory_id), timeout_s)
    return outcome


async def back_off(outcome: Outcome, honor_pushback: bool, shed_backoff_ms: float,
                   error_backoff_ms: float) -> None:
    """What a well-behaved client does after a refusal or an error before its next call: on
    shedding, wait the server's hint (or `shed_backoff_ms` without one) unless told to ignore
    it; on any other error, `error_backoff_ms`."""
    if outcome.code == OK:
        return
    if outcome.code == SHED:
        if not honor_pushback:
            return
        wait_ms = outcome.pushback_ms if outcome.pushback_ms is not None else shed_backoff_ms
        await asyncio.sleep(max(wait_ms, 0) / 1000)
    elif error_backoff_ms > 0:
        await asyncio.sleep(error_backoff_ms / 1000)


def choose(rng: random.Random, shares: Sequence[tuple[str, float]]) -> str:
    """An operation drawn by share, e.g. (("store", 0.09), ("delete", 0.01)); the rest: recall."""
    x = rng.random()
    for op, share in shares:
        if x < share:
            return op
        x -= share
    return "recall"


@dataclass
class Writes:
    """Every write the load made and what became of it: acknowledged stores (id -> content),
    memories whose Delete was acknowledged, and stores or deletes with an unknown outcome (an
    error or a missed deadline: the write may or may not have happened)."""

    stored: dict[str, str] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    store_unknown: int = 0
    delete_unknown: set[str] = field(default_factory=set)
    _live: list[str] = field(default_factory=list)

    def acknowledged(self, memory_id: str, content: str) -> None:
        self.stored[memory_id] = content
        self._live.append(memory_id)

    def take_live(self, rng: random.Random) -> str | None:
        """A random acknowledged, not yet deleted memory, removed from the candidates (each is
        deleted at most once); None when there is none."""
        if not self._live:
            return None
        i = rng.randrange(len(self._live))
        self._live[i], self._live[-1] = self._live[-1], self._live[i]
        return self._live.pop()

    def delete_outcome(self, memory_id: str, outcome: Outcome) -> None:
        """OK: deleted. Shed: refused before any work, so still live (the end check holds the
        server to that). Anything else: unknown, and left out of the end check."""
        if outcome.code == OK:
            self.deleted.add(memory_id)
        elif outcome.code == SHED:
            self._live.append(memory_id)
        else:
            self.delete_unknown.add(memory_id)

    def store_outcome(self, outcome: Outcome, memory_id: str, content: str) -> None:
        """OK: acknowledged. Shed: refused, nothing written. Anything else: unknown."""
        if outcome.code == OK:
            self.acknowledged(memory_id, content)
        elif outcome.code != SHED:
            self.store_unknown += 1

    @property
    def expected_live(self) -> list[str]:
        return [i for i in self.stored if i not in self.deleted and i not in self.delete_unknown]


RETRYABLE = ("RESOURCE_EXHAUSTED", "UNAVAILABLE", "DEADLINE_EXCEEDED")


async def verify_writes(gateway: Gateway, namespace: str, writes: Writes,
                        concurrency: int = 16, attempts: int = 20,
                        timeout_s: float = 5.0) -> dict[str, Any]:
    """Get every acknowledged write: the live ones must come back with the content stored, the
    acknowledged deletes must be gone (NOT_FOUND). A refused or unreachable Get is retried (the
    server's pushback hint, else 200 ms, up to `attempts` times), so shedding cannot pass for a
    lost write; what still has no answer is `unverified`, which fails the check as well."""
    live = writes.expected_live
    jobs = [(i, True) for i in live] + [(i, False) for i in writes.deleted]
    queue: asyncio.Queue = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    lost: list[str] = []
    changed: list[str] = []
    resurrected: list[str] = []
    unverified: list[tuple[str, str]] = []
    retries = 0

    async def worker(n: int) -> None:
        nonlocal retries
        stub = gateway.stub(n)
        while not queue.empty():
            memory_id, should_exist = queue.get_nowait()
            for _ in range(attempts):
                outcome, response = await invoke("get", stub.Get, memory_pb2.GetRequest(
                    namespace=namespace, id=memory_id), timeout_s)
                if outcome.code not in RETRYABLE:
                    break
                retries += 1
                await asyncio.sleep((outcome.pushback_ms or 200) / 1000)
            if should_exist:
                if outcome.code == "NOT_FOUND":
                    lost.append(memory_id)
                elif outcome.code != OK:
                    unverified.append((memory_id, outcome.code))
                elif response.memory.content != writes.stored[memory_id]:
                    changed.append(memory_id)
            elif outcome.code == OK:
                resurrected.append(memory_id)
            elif outcome.code != "NOT_FOUND":
                unverified.append((memory_id, outcome.code))

    started = time.monotonic()
    await asyncio.gather(*(worker(n) for n in range(concurrency)))
    return {
        "acknowledged_stores": len(writes.stored),
        "acknowledged_deletes": len(writes.deleted),
        "stores_unknown_outcome": writes.store_unknown,
        "deletes_unknown_outcome": len(writes.delete_unknown),
        "checked_live": len(live),
        "lost": len(lost),
        "content_changed": len(changed),
        "deleted_but_found": len(resurrected),
        "unverified": len(unverified),
        "unverified_codes": dict(Counter(code for _, code in unverified)),
        "get_retries": retries,
        "examples": {"lost": lost[:5], "content_changed": changed[:5],
                     "deleted_but_found": resurrected[:5]},
        "seconds": time.monotonic() - started,
    }


def writes_ok(check: dict[str, Any]) -> bool:
    return not (check["lost"] or check["content_changed"] or check["unverified"]
                or check["deleted_but_found"])


def summarize(outcomes: Iterable[Outcome], seconds: float) -> dict[str, Any]:
    """One window of outcomes: rates, every code by operation, answered-recall percentiles,
    the degraded share and the shedding hints seen."""
    outcomes = list(outcomes)
    seconds = max(seconds, 1e-9)
    codes: dict[str, Counter] = {}
    for o in outcomes:
        codes.setdefault(o.op, Counter())[o.code] += 1
    answered = [o for o in outcomes if o.op == "recall" and o.code == OK]
    latencies = [o.latency_ms for o in answered]
    shed = [o for o in outcomes if o.code == SHED]
    hints = [o.pushback_ms for o in shed if o.pushback_ms is not None]
    ok = sum(o.code == OK for o in outcomes)
    details: dict[str, Counter] = {}
    for o in outcomes:
        if o.code != OK:
            details.setdefault(f"{o.op} {o.code}", Counter())[o.detail] += 1
    totals = Counter(o.code for o in outcomes)
    unavailable = Counter(unavailable_cause(o.detail) for o in outcomes
                          if o.op == "recall" and o.code == "UNAVAILABLE")
    return {
        "seconds": seconds,
        "completed": len(outcomes),
        "ok": ok,
        "goodput_per_s": ok / seconds,
        "recalls_ok_per_s": len(answered) / seconds,
        "shed": len(shed),
        "shed_per_s": len(shed) / seconds,
        "errors": sum(n for c, n in totals.items() if c not in (OK, SHED)),
        "codes": dict(sorted(totals.items())),
        "codes_by_op": {op: dict(sorted(c.items())) for op, c in sorted(codes.items())},
        "recall_p50_ms": percentile(latencies, 50),
        "recall_p95_ms": percentile(latencies, 95),
        "recall_p99_ms": percentile(latencies, 99),
        "recall_max_ms": max(latencies, default=0.0),
        "degraded_share": (sum(o.degraded for o in answered) / len(answered)) if answered
        else 0.0,
        "pushback_hints": len(hints),
        "shed_without_hint": len(shed) - len(hints),
        "pushback_p50_ms": percentile(hints, 50) if hints else None,
        # the three commonest details of each failing (operation, code)
        "error_details": {k: dict(c.most_common(3)) for k, c in sorted(details.items())},
        # recalls failed UNAVAILABLE, by cause (unavailable_cause)
        "recall_unavailable": dict(sorted(unavailable.items())),
    }


def machine_text(machine: dict[str, Any]) -> str:
    """harness.script.machine_info() as a report line: "platform ..., cpu_count 2, ..."."""
    return ", ".join(f"{k} {v}" for k, v in machine.items())


def codes_text(codes: dict[str, int]) -> str:
    """{"OK": 5, "RESOURCE_EXHAUSTED": 2} -> "OK 5, RESOURCE_EXHAUSTED 2"."""
    return ", ".join(f"{c} {n}" for c, n in codes.items()) or "none"


class LoopLag:
    """How late the benchmark's own event loop wakes up (sleeps of `interval_s`): when the
    clients saturate the loop, the latencies they measure include this lag."""

    def __init__(self, interval_s: float = 0.05) -> None:
        self.interval_s = interval_s
        self.samples: list[float] = []
        self._task: asyncio.Task | None = None

    async def _run(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(self.interval_s)
            self.samples.append((time.monotonic() - before - self.interval_s) * 1000)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    def take(self) -> dict[str, float]:
        """p50 / p99 / max lag in ms since the last take."""
        samples, self.samples = self.samples, []
        return {"p50_ms": percentile(samples, 50), "p99_ms": percentile(samples, 99),
                "max_ms": max(samples, default=0.0)}

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def proc_sample(pid: int) -> dict[str, float] | None:
    """Resident memory (VmRSS, bytes) and CPU time (user + system, seconds) of a live process,
    from /proc; None when it is gone or /proc is not there."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = next((int(line.split()[1]) * 1024 for line in f
                        if line.startswith("VmRSS:")), 0)
        with open(f"/proc/{pid}/stat") as f:
            # the command name (field 2) may hold spaces: split after its closing parenthesis
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return {"rss_bytes": rss, "cpu_s": cpu}


def scrape(metrics_port: int | None, timeout_s: float) -> str | None:
    """A service's Prometheus exposition text from its metrics port on this machine; None
    when it has none or does not answer within timeout_s."""
    if not metrics_port:
        return None
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics",
                                    timeout=timeout_s) as answer:
            return answer.read().decode()
    except (OSError, ValueError):
        return None


def declared_cache_bytes(metrics_port: int | None) -> float | None:
    """The bytes a service says its bounded caches hold: the sum of its
    recallmesh_*_cache_bytes gauges (the graph leg's namespace graphs, the indexer's concept
    vectors), from its Prometheus endpoint; None when it does not answer within a second."""
    text = scrape(metrics_port, timeout_s=1.0)
    if text is None:
        return None
    return sum(sample.value for family in text_string_to_metric_families(text)
               if family.name.startswith("recallmesh_") and family.name.endswith("_cache_bytes")
               for sample in family.samples)


def renice_stack(stack: Stack, niceness: int) -> int:
    """Lower the CPU priority of every process of the stack (its services and the embedded
    Postgres, every thread of each: Linux keeps a nice value per thread) to `niceness`, so
    that clients sharing the machine with it, standing in for callers on machines of their
    own, are not starved by the stack they measure. Returns how many threads were reniced.
    A service the supervisor restarts later starts at the default priority again."""
    import psutil

    roots = [psutil.Process(p.pid) for p in stack.processes.values() if p.poll() is None]
    data_dir = str(stack.data_dir)
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmdline = " ".join(proc.info.get("cmdline") or [])
        if data_dir and proc.info.get("name") == "postgres" and data_dir in cmdline:
            roots.append(proc)
    done = 0
    for root in roots:
        try:
            family = [root, *root.children(recursive=True)]
        except psutil.Error:
            continue
        for proc in family:
            try:
                for thread in proc.threads():
                    os.setpriority(os.PRIO_PROCESS, thread.id, niceness)
                    done += 1
            except (psutil.Error, OSError):
                continue
    return done


def handling_buckets(metrics_port: int | None, method: str = "Recall") -> dict[float, float]:
    """The cumulative bucket counts (upper bound in seconds -> calls) of a service's
    grpc_server_handling_seconds for `method` answered OK, from its metrics endpoint: the
    server-side time of the calls, without the client's share; {} when it does not answer."""
    text = scrape(metrics_port, timeout_s=2.0)
    if text is None:
        return {}
    buckets: dict[float, float] = {}
    for family in text_string_to_metric_families(text):
        if family.name != "grpc_server_handling_seconds":
            continue
        for sample in family.samples:
            labels = sample.labels
            if (sample.name.endswith("_bucket") and labels.get("grpc_method") == method
                    and labels.get("grpc_code") == "OK"):
                bound = float(labels["le"])
                buckets[bound] = buckets.get(bound, 0.0) + sample.value
    return buckets


def server_latency(before: dict[float, float], after: dict[float, float],
                   over_s: float) -> dict[str, float | None]:
    """From two handling_buckets scrapes: the calls answered between them, the bucket bound
    their p99 lies under (None: beyond the last finite bound), and how many took more than
    the largest bound not above `over_s` (at least that many took more than it)."""
    bounds = sorted(after)
    counts = {b: after[b] - before.get(b, 0.0) for b in bounds}
    total = counts.get(float("inf"), 0.0)
    p99 = next((b for b in bounds if total and counts[b] >= 0.99 * total), None)
    floor = max((b for b in bounds if b <= over_s), default=None)
    slower = total - counts[floor] if floor is not None else 0.0
    return {"answered": total, "p99_under_s": None if p99 == float("inf") else p99,
            "slower_than_s": floor, "slower": slower}


def stack_sample(stack: Stack) -> dict[str, dict[str, float]]:
    """proc_sample of every running service process of the stack, by service name, with its
    pid (a supervisor that restarts a service replaces its process: the pid tells) and the
    bytes its declared caches hold (declared_cache_bytes; None when unknown)."""
    found = {}
    for name, process in list(stack.processes.items()):
        sample = proc_sample(process.pid) if process.poll() is None else None
        if sample is not None:
            found[name] = {**sample, "pid": process.pid,
                           "cache_bytes": declared_cache_bytes(stack.metrics.get(name))}
    return found


PG_CONNECTIONS_SQL = """
SELECT coalesce(nullif(application_name, ''), backend_type), count(*)
FROM pg_stat_activity
WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()
GROUP BY 1 ORDER BY 1
"""


def pg_connections(conn: Any) -> dict[str, int]:
    """Client connections to Postgres by application name (the services' pools are named
    recallmesh-<service>), the asking connection left out."""
    return {name: n for name, n in conn.execute(PG_CONNECTIONS_SQL).fetchall()}


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The least-squares slope of ys over xs; 0.0 with fewer than two distinct xs."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (files only, no display); a clear exit when
    matplotlib is missing (a dependency of the lab, benchmarks/pyproject.toml: `make install`)."""
    try:
        import matplotlib
    except ImportError:
        raise SystemExit("error: matplotlib is not installed (the lab's dependency: make install, "
                         "or pip install matplotlib); --no-plot skips the plot") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
