"""Soak: 30 minutes of mixed load at a fixed, sustainable rate; errors, latency, resident memory
of every service and Postgres connections over time, and every acknowledged write at the end.

  python -m benchmarks.performance.soak [--duration-s 1800] [--rate OPS_PER_S]
                                        [--rate-from benchmarks/results/overload.json]
                                        [--memories 5000] [--sample-s 10] [--warmup-s S]
                                        [--store-share 0.09] [--delete-share 0.01]
                                        [--json PATH] [--report PATH.md] [--no-plot]

It starts its own stack (embedded Postgres in a temporary directory, every service on free
ports, authentication on), loads --memories real texts, then offers --rate calls per second for
--duration-s: an open-loop pacer (one asyncio loop, calls spread over --channels grpc.aio
channels) starts call i at i / rate seconds whatever the earlier calls do, at most
--max-in-flight at once (a call that would exceed it is not sent, and counted: the rate was
not sustainable). A call is a Recall (k=10, default budget, deadline budget + --margin-ms), a
Store of a further real text (--store-share) or a Delete of a memory an earlier Store of the
soak wrote (--delete-share; a Recall while there is none); stores and deletes have
--write-deadline-ms. Every status code that comes back is counted; a refused call is not
retried (the offered rate stays the rate).

Without --rate, the rate is --rate-fraction (0.5) of the best goodput a step of the last
`python -m benchmarks overload` run reached without shedding or errors (--rate-from, its JSON),
else 20/s.

Every --sample-s seconds: goodput, errors by code, the answered recalls' p95, the resident
memory (VmRSS) of every service process of the stack (by pid, so a restarted service shows),
and Postgres client connections by application name (pg_stat_activity). At the end: every
acknowledged Store not since deleted must be retrievable with its content, every acknowledged
Delete must stay deleted; each service's RSS slope per hour (least squares over the samples
after --warmup-s) and the connection count's drift. Required, reported pass/fail: zero errors
besides shedding, zero lost writes, RSS flat (a slope, beyond what the service's declared
bounded caches explain -- its recallmesh_*_cache_bytes gauges, sampled from its metrics port --
of at most max(--flat-mib-per-h, --flat-share-per-h of the service's mean RSS) per hour:
growth fails, shrinking does not),
connections stable (the mean of the last third of the samples after the warm-up at most
--conn-growth above the first third's). --report writes the markdown report and a PNG beside
it (RSS per service, throughput and p95, connections).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.harness.budget import save_png
from benchmarks.harness.load import (
    OK,
    SHED,
    Gateway,
    LoopLag,
    Outcome,
    Writes,
    choose,
    codes_text,
    delete,
    loaded_stack,
    machine_text,
    pg_connections,
    pyplot,
    recall,
    slope,
    stack_sample,
    store,
    summarize,
    supervisor_summary,
    supervisor_text,
    verify_writes,
    writes_ok,
)
from benchmarks.harness.script import machine_info, recallmesh_env
from benchmarks.harness.stats import percentile
from benchmarks.performance.gateway_recall import (
    DATASETS,
    NAMESPACE,
)
from recallmesh.gateway.settings import GatewaySettings
from recallmesh.stack.supervisor import Stack

OVERLOAD_JSON = Path("benchmarks/results/overload.json")  # what `make bench NAME=overload` writes
FALLBACK_RATE = 20.0
MIB = 1024 * 1024


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration-s", type=float, default=1800.0)
    parser.add_argument("--rate", type=float, help="offered calls per second (default: from "
                        "--rate-from, else 20)")
    parser.add_argument("--rate-from", type=Path, default=OVERLOAD_JSON,
                        help="an overload run's JSON to derive the rate from")
    parser.add_argument("--rate-fraction", type=float, default=0.5,
                        help="share of the overload run's best unshed goodput to offer")
    parser.add_argument("--memories", type=int, default=5000, help="loaded before the soak")
    parser.add_argument("--sample-s", type=float, default=10.0)
    parser.add_argument("--warmup-s", type=float,
                        help="samples before this are left out of the slopes (default: a "
                        "quarter of the duration, at most 300 s)")
    parser.add_argument("--store-share", type=float, default=0.09)
    parser.add_argument("--delete-share", type=float, default=0.01)
    parser.add_argument("--margin-ms", type=float, default=250.0,
                        help="a recall's deadline is the gateway's recall budget plus this")
    parser.add_argument("--write-deadline-ms", type=float, default=2000.0)
    parser.add_argument("--channels", type=int, default=8)
    parser.add_argument("--max-in-flight", type=int, default=64)
    parser.add_argument("--flat-mib-per-h", type=float, default=10.0)
    parser.add_argument("--flat-share-per-h", type=float, default=0.05)
    parser.add_argument("--conn-growth", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--json", type=Path, help="every sample, as JSON")
    parser.add_argument("--report", type=Path,
                        help="the markdown report; the plot goes beside it (.png)")
    parser.add_argument("--no-plot", action="store_true", help="no PNG (no matplotlib needed)")
    args = parser.parse_args(argv)
    if args.warmup_s is None:
        args.warmup_s = min(300.0, args.duration_s / 4)
    if args.store_share < 0 or args.delete_share < 0 or args.store_share + args.delete_share > 1:
        parser.error("--store-share and --delete-share must be shares summing to at most 1")
    return args


def choose_rate(args: argparse.Namespace) -> tuple[float, str]:
    """The offered rate and where it came from."""
    if args.rate is not None:
        return args.rate, "--rate"
    try:
        steps = json.loads(args.rate_from.read_text())["steps"]
    except (OSError, ValueError, KeyError):
        return FALLBACK_RATE, f"the default (no overload results at {args.rate_from})"
    clean = [s for s in steps if s["shed"] == 0 and s["errors"] == 0]
    best = max(clean or steps, key=lambda s: s["goodput_per_s"])
    how = "without shedding or errors" if clean else "(every step shed or failed: the peak)"
    return (args.rate_fraction * best["goodput_per_s"],
            f"{args.rate_fraction:.0%} of {best['goodput_per_s']:.1f}/s, the best goodput "
            f"{how} in {args.rate_from} ({best['clients']} clients)")


class Soak:
    def __init__(self, stack: Stack, args: argparse.Namespace, rate: float,
                 queries: list[str], texts: list[str], recall_deadline_s: float) -> None:
        self.stack, self.args, self.rate = stack, args, rate
        self.queries, self.texts = queries, texts
        self.recall_deadline_s = recall_deadline_s
        self.writes = Writes()
        self.window: list[Outcome] = []  # since the last sample
        self.answered_ms: list[float] = []  # every answered recall's latency
        self.totals: list[Outcome] = []
        self.in_flight = 0
        self.sent = 0
        self.not_sent = 0
        self.samples: list[dict] = []
        self.lag = LoopLag()
        self.db: psycopg.Connection | None = None  # the sampler's own, left out of the count

    async def call(self, i: int) -> None:
        args = self.args
        rng = random.Random(f"{args.seed}-{i}")
        stub = self.gateway.stub(i)
        op = choose(rng, (("store", args.store_share), ("delete", args.delete_share)))
        target = self.writes.take_live(rng) if op == "delete" else None
        write_s = args.write_deadline_ms / 1000
        self.in_flight += 1
        try:
            if op == "store":
                text = rng.choice(self.texts)
                outcome, memory_id = await store(stub, NAMESPACE, text, write_s)
                self.writes.store_outcome(outcome, memory_id, text)
            elif target is not None:
                outcome = await delete(stub, NAMESPACE, target, write_s)
                self.writes.delete_outcome(target, outcome)
            else:
                outcome = await recall(stub, NAMESPACE, rng.choice(self.queries),
                                       self.recall_deadline_s)
        finally:
            self.in_flight -= 1
        self.window.append(outcome)
        self.totals.append(outcome)

    async def pace(self, started: float, end: float) -> None:
        tasks: set[asyncio.Task] = set()
        i = 0
        while True:
            at = started + i / self.rate
            if at >= end:
                break
            delay = at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            i += 1
            if self.in_flight >= self.args.max_in_flight:
                self.not_sent += 1
                continue
            self.sent += 1
            task = asyncio.create_task(self.call(i))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        await asyncio.gather(*tasks)

    def sample(self, started: float, last: float) -> float:
        now = time.monotonic()
        window, self.window = self.window, []
        row = summarize(window, now - last)
        row.pop("codes_by_op")
        try:
            if self.db is None or self.db.closed:
                self.db = psycopg.connect(self.stack.dsn, autocommit=True, connect_timeout=5,
                                          application_name="recallmesh-soak-sampler")
            connections = pg_connections(self.db)
        except psycopg.Error as exc:  # Postgres away: say so, connect again next time
            connections = {"error": (str(exc).splitlines() or [type(exc).__name__])[0]}
            if self.db is not None:
                self.db.close()
        row.update({"t_s": now - started, "services": stack_sample(self.stack),
                    "pg_connections": connections,
                    "pg_connections_total": sum(v for v in connections.values()
                                                if isinstance(v, int)),
                    "loop_lag": self.lag.take(), "in_flight": self.in_flight,
                    "not_sent_so_far": self.not_sent})
        self.samples.append(row)
        rss = sum(s["rss_bytes"] for s in row["services"].values()) / MIB
        print(f"  t={row['t_s']:6.0f}s  {row['goodput_per_s']:6.1f} OK/s  shed {row['shed']}"
              f"  errors {row['errors']}  p95 {row['recall_p95_ms']:6.1f} ms  RSS {rss:7.1f} MiB"
              f"  pg {row['pg_connections_total']}", flush=True)
        return now

    async def run(self) -> dict:
        args = self.args
        self.gateway = Gateway(self.stack, args.channels)
        self.lag.start()
        try:
            started = time.monotonic()
            end = started + args.duration_s
            pacer = asyncio.create_task(self.pace(started, end))
            last = started
            while not pacer.done():
                await asyncio.wait({pacer}, timeout=max(0.0, last + args.sample_s
                                                         - time.monotonic()))
                now = time.monotonic()
                # the tail after the last full sample: only as a sample of its own when it is
                # long enough for its rates to mean something (its calls are in the totals)
                if now >= last + args.sample_s or (pacer.done()
                                                   and now - last >= args.sample_s / 2):
                    last = self.sample(started, last)
            await pacer
            print(f"reading back {len(self.writes.expected_live)} acknowledged writes ...",
                  flush=True)
            check = await verify_writes(self.gateway, NAMESPACE, self.writes)
        finally:
            await self.lag.stop()
            await self.gateway.close()
            if self.db is not None:
                self.db.close()
        return check


def fit(samples: list[dict], warmup_s: float, args: argparse.Namespace) -> dict[str, dict]:
    """Per service: RSS after the warm-up (of its last process, when it was restarted), the
    least-squares slope in MiB per hour, the part of it the service's declared, bounded caches
    explain (its recallmesh_*_cache_bytes gauges: a cache filling up to its bound is no leak),
    and whether the rest is flat: no growth beyond the limit (a shrinking RSS is no leak; its
    slope is reported all the same)."""
    late = [s for s in samples if s["t_s"] >= warmup_s] or samples
    out = {}
    for name in sorted({n for s in samples for n in s["services"]}):
        points = [(s["t_s"], s["services"][name]) for s in late if name in s["services"]]
        if not points:
            continue
        pid = points[-1][1]["pid"]
        pids = {p["pid"] for _, p in points}
        points = [(t, p) for t, p in points if p["pid"] == pid]
        xs = [t / 3600 for t, _ in points]
        ys = [p["rss_bytes"] / MIB for _, p in points]
        caches = [(x, p["cache_bytes"] / MIB) for x, (_, p) in zip(xs, points, strict=True)
                  if p.get("cache_bytes") is not None]
        per_h = slope(xs, ys)
        cache_per_h = slope([x for x, _ in caches], [c for _, c in caches]) if caches else 0.0
        unexplained = per_h - max(cache_per_h, 0.0)
        mean = sum(ys) / len(ys)
        limit = max(args.flat_mib_per_h, args.flat_share_per_h * mean)
        out[name] = {"first_mib": ys[0], "last_mib": ys[-1], "min_mib": min(ys),
                     "max_mib": max(ys), "mean_mib": mean, "slope_mib_per_h": per_h,
                     "cache_slope_mib_per_h": cache_per_h,
                     "cache_last_mib": caches[-1][1] if caches else None,
                     "unexplained_slope_mib_per_h": unexplained,
                     "limit_mib_per_h": limit, "flat": unexplained <= limit,
                     "points": len(ys), "restarted": len(pids) > 1}
    return out


def mib_or_dash(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def connection_drift(samples: list[dict], warmup_s: float) -> dict[str, float]:
    late = [s["pg_connections_total"] for s in samples if s["t_s"] >= warmup_s]
    late = late or [s["pg_connections_total"] for s in samples]
    third = max(1, len(late) // 3)
    first, last = late[:third], late[-third:]
    return {"min": min(late, default=0), "max": max(late, default=0),
            "first_third_mean": sum(first) / len(first) if first else 0.0,
            "last_third_mean": sum(last) / len(last) if last else 0.0,
            "slope_per_h": slope([s["t_s"] / 3600 for s in samples if s["t_s"] >= warmup_s],
                                 [s["pg_connections_total"] for s in samples
                                  if s["t_s"] >= warmup_s])}


def checks(result: dict, args: argparse.Namespace) -> list[tuple[str, bool, str]]:
    totals, writes, rss, conn = (result["totals"], result["writes"], result["rss"],
                                 result["connections"])
    errors = {c: n for c, n in totals["codes"].items() if c not in (OK, SHED)}
    growth = conn["last_third_mean"] - conn["first_third_mean"]
    unflat = [n for n, r in rss.items() if not r["flat"]]
    return [
        ("zero errors besides shedding", not errors,
         f"errors: {codes_text(errors)}; shed {totals['shed']}"),
        ("every acknowledged write retrievable", writes_ok(writes),
         f"{writes['checked_live']} live writes read back: {writes['lost']} lost, "
         f"{writes['content_changed']} changed, {writes['unverified']} unverified "
         f"({codes_text(writes['unverified_codes'])}); {writes['acknowledged_deletes']} "
         f"acknowledged deletes, {writes['deleted_but_found']} found again"),
        ("resident memory flat in every service (slope beyond its declared caches' at most "
         "its limit)", not unflat,
         "; ".join(f"{n} {r['unexplained_slope_mib_per_h']:+.1f} MiB/h "
                   f"(limit {r['limit_mib_per_h']:.1f})" for n, r in rss.items())),
        (f"database connections stable (drift at most {args.conn_growth:g})",
         growth <= args.conn_growth,
         f"{conn['min']}..{conn['max']} client connections after the warm-up; mean "
         f"{conn['first_third_mean']:.1f} in the first third, {conn['last_third_mean']:.1f} "
         "in the last"),
        ("no service process exited", not result["supervisor"]["events"],
         supervisor_text(result["supervisor"]) or "none exited"),
        ("the client kept the offered rate (no call left unsent)", result["not_sent"] == 0,
         f"{result['sent']} sent, {result['not_sent']} not sent at the in-flight cap of "
         f"{args.max_in_flight}"),
    ]


def plot(result: dict, path: Path) -> None:
    plt = pyplot()
    samples = result["samples"]
    minutes = [s["t_s"] / 60 for s in samples]
    fig, (mem, load_ax, conn_ax) = plt.subplots(3, 1, figsize=(9, 10), sharex=True)
    for name in sorted({n for s in samples for n in s["services"]}):
        points = [(m, s["services"][name]["rss_bytes"] / MIB)
                  for m, s in zip(minutes, samples, strict=True) if name in s["services"]]
        fitted = result["rss"].get(name, {})
        mem.plot([m for m, _ in points], [v - points[0][1] for _, v in points],
                 label=f"{name} ({points[-1][1]:.0f} MiB, "
                       f"{fitted.get('slope_mib_per_h', 0):+.1f} MiB/h)")
    mem.set_ylabel("RSS change since the first sample, MiB")
    mem.set_title("recallmesh soak: resident memory per service (level and slope in the legend)")
    mem.legend(fontsize="small", ncol=2)
    load_ax.plot(minutes, [s["goodput_per_s"] for s in samples], label="answered OK/s")
    load_ax.plot(minutes, [s["shed_per_s"] for s in samples], label="shed/s")
    load_ax.plot(minutes, [s["errors"] / s["seconds"] for s in samples], label="errors/s")
    load_ax.set_ylabel("calls per second")
    load_ax.legend(loc="upper left", fontsize="small")
    p95 = load_ax.twinx()
    p95.plot(minutes, [s["recall_p95_ms"] for s in samples], color="black", linestyle=":",
             label="recall p95 ms")
    p95.set_ylabel("recall p95, ms")
    p95.legend(loc="upper right", fontsize="small")
    conn_ax.plot(minutes, [s["pg_connections_total"] for s in samples], label="all")
    for app in sorted({a for s in samples for a in s["pg_connections"] if a != "error"}):
        conn_ax.plot(minutes, [s["pg_connections"].get(app, 0) for s in samples],
                     linewidth=0.8, label=app)
    conn_ax.legend(fontsize="small", ncol=2)
    conn_ax.set_ylabel("Postgres client connections")
    conn_ax.set_xlabel("minutes")
    for ax in (mem, load_ax, conn_ax):
        ax.grid(True, alpha=0.3)
        ax.axvline(result["warmup_s"] / 60, color="grey", linestyle="--", linewidth=0.8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_png(fig, path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.report and not args.no_plot:
        pyplot()  # fail now, not after the run
    command = "python -m benchmarks.performance.soak " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    rate, rate_source = choose_rate(args)
    print(f"offered rate {rate:.1f} calls/s: {rate_source}", flush=True)
    settings = GatewaySettings.from_env()
    budget_ms = settings.default_budget_ms
    recall_deadline_ms = budget_ms + args.margin_ms
    with loaded_stack("soak", args.datasets, args.memories) as run:
        print(f"soaking {args.duration_s:.0f} s at {rate:.1f} calls/s ...", flush=True)
        soak = Soak(run.stack, args, rate, run.queries, run.store_texts,
                    recall_deadline_ms / 1000)
        writes = asyncio.run(soak.run())
        exited = run.stack.check_alive()
        supervisor = supervisor_summary(run.watcher)
    loaded, load_s, startup_s = run.memories, run.load_s, run.startup_s

    totals = summarize(soak.totals, args.duration_s)
    answered = [o.latency_ms for o in soak.totals if o.op == "recall" and o.code == OK]
    totals["recall_p50_ms"] = percentile(answered, 50)
    result = {
        "benchmark": "soak", "command": command, "machine": machine_info(),
        "memories": loaded, "load_s": load_s, "stack_startup_s": startup_s,
        "rate": rate, "rate_source": rate_source, "duration_s": args.duration_s,
        "warmup_s": args.warmup_s, "budget_ms": budget_ms,
        "recall_deadline_ms": recall_deadline_ms,
        "legs": [leg.name for leg in settings.legs], "settings": recallmesh_env(),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "sent": soak.sent, "not_sent": soak.not_sent, "exited": exited,
        "supervisor": supervisor,
        "totals": totals, "writes": writes, "samples": soak.samples,
        "rss": fit(soak.samples, args.warmup_s, args),
        "connections": connection_drift(soak.samples, args.warmup_s),
    }
    result["checks"] = [{"check": n, "passed": p, "evidence": e}
                        for n, p, e in checks(result, args)]
    report(result, args)


def report(result: dict[str, Any], args: argparse.Namespace) -> None:
    t = result["totals"]
    summary = [
        "| calls sent | answered OK/s | shed | errors | status codes | recall p50 / p95 / p99 ms "
        "| degraded |",
        "|---:|---:|---:|---:|---|---:|---:|",
        f"| {result['sent']} | {t['goodput_per_s']:.1f} | {t['shed']} | {t['errors']} "
        f"| {codes_text(t['codes'])} | {t['recall_p50_ms']:.1f} / {t['recall_p95_ms']:.1f} / "
        f"{t['recall_p99_ms']:.1f} | {t['degraded_share']:.1%} |",
    ]
    rss = [
        "| service | RSS after warm-up MiB | at the end MiB | min / max MiB | slope MiB/h "
        "| declared caches at the end MiB | their slope MiB/h | slope beyond them MiB/h "
        "| limit MiB/h | flat |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|",
        *(f"| {n}{' (restarted)' if r['restarted'] else ''} | {r['first_mib']:.1f} "
          f"| {r['last_mib']:.1f} | {r['min_mib']:.1f} / {r['max_mib']:.1f} "
          f"| {r['slope_mib_per_h']:+.2f} "
          f"| {mib_or_dash(r.get('cache_last_mib'))} "
          f"| {r.get('cache_slope_mib_per_h', 0.0):+.2f} "
          f"| {r.get('unexplained_slope_mib_per_h', r['slope_mib_per_h']):+.2f} "
          f"| {r['limit_mib_per_h']:.1f} "
          f"| {'yes' if r['flat'] else 'NO'} |" for n, r in result["rss"].items()),
    ]
    c = result["connections"]
    last = result["samples"][-1]["pg_connections"] if result["samples"] else {}
    conns = [f"Postgres client connections after the warm-up: {c['min']}..{c['max']}, mean "
             f"{c['first_third_mean']:.1f} in the first third and {c['last_third_mean']:.1f} in "
             f"the last ({c['slope_per_h']:+.2f}/h); at the end by application: "
             f"{codes_text(last)}."]
    verdicts = [f"- **{'PASS' if x['passed'] else 'FAIL'}** {x['check']}: {x['evidence']}"
                for x in result["checks"]]
    print("\n" + "\n".join(summary + [""] + rss + [""] + conns + [""] + verdicts))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    if not args.report:
        return
    png = args.report.with_suffix(".png")
    if not args.no_plot:
        plot(result, png)
    every = max(1, round(60 / args.sample_s))  # about one row a minute
    series = ["| t s | answered OK/s | shed | errors | recall p95 ms | RSS total MiB "
              "| Postgres connections |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for s in result["samples"][every - 1::every]:
        series.append(f"| {s['t_s']:.0f} | {s['goodput_per_s']:.1f} | {s['shed']} "
                      f"| {s['errors']} | {s['recall_p95_ms']:.1f} "
                      f"| {sum(v['rss_bytes'] for v in s['services'].values()) / MIB:.1f} "
                      f"| {s['pg_connections_total']} |")
    header = [
        "# Soak: mixed load at a fixed rate",
        "",
        f"Generated by `python -m benchmarks soak` (`{result['command']}`); how the run is "
        "built is in the "
        "script's docstring (`benchmarks/performance/soak.py`).",
        "",
        f"- Stack: its own (embedded Postgres, every service on this machine, authentication "
        f"on), legs {', '.join(result['legs'])}; {result['memories']} real memories loaded in "
        f"{result['load_s']:.0f} s.",
        f"- Load: {result['rate']:.1f} calls/s offered open-loop for "
        f"{result['duration_s']:.0f} s ({result['rate_source']}); "
        f"{1 - args.store_share - args.delete_share:.0%} Recall (k=10, deadline "
        f"{result['recall_deadline_ms']:.0f} ms = budget {result['budget_ms']} ms + "
        f"{args.margin_ms:.0f} ms), {args.store_share:.0%} Store, {args.delete_share:.0%} "
        f"Delete of a soak-written memory (writes: deadline {args.write_deadline_ms:.0f} ms).",
        f"- Samples every {args.sample_s:.0f} s; slopes and drift over the samples after the "
        f"first {result['warmup_s']:.0f} s (the warm-up, dashed in the plot).",
        f"- Settings (RECALLMESH_*): {result['settings'] or 'none; the defaults'}.",
        f"- Machine: {machine_text(result['machine'])} (the client runs on it too).",
        "",
    ]
    if result["exited"]:
        header += [f"Services not running at the end: {', '.join(result['exited'])}.", ""]
    if supervisor_text(result["supervisor"]):
        header += [supervisor_text(result["supervisor"]), ""]
    w = result["writes"]
    details = [f"- {key}: " + ", ".join(f"\"{d}\" x{n}" for d, n in found.items())
               for key, found in t["error_details"].items()]
    if details:
        summary = [*summary, "", "What the failed calls said (the commonest status details):",
                   "", *details]
    body = [*summary, "", "## Resident memory", "", *rss, "", "## Database connections", "",
            *conns, "", "## Required", "", *verdicts, "",
            f"Writes: {w['acknowledged_stores']} stores and {w['acknowledged_deletes']} deletes "
            f"acknowledged ({w['stores_unknown_outcome']} stores and "
            f"{w['deletes_unknown_outcome']} deletes with an unknown outcome, not checked); "
            f"read back in {w['seconds']:.1f} s.", ""]
    if not args.no_plot:
        body += [f"![RSS, throughput and p95, connections over time]({png.name})", ""]
    body += ["## Over time (about one sample a minute)", "", *series, ""]
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text("\n".join(header + body))
    print(f"\nwrote {args.report}" + ("" if args.no_plot else f" and {png}"))


if __name__ == "__main__":
    main()
