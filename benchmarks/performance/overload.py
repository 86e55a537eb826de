"""Overload: goodput, shedding and latency as the offered load steps from 1 to 500 concurrent
clients, and zero lost writes.

  python -m benchmarks.performance.overload [--memories 5000] [--steps 1,10,50,100,200,500]
                                            [--step-s 60] [--warmup-s 5] [--store-share 0.1]
                                            [--margin-ms 250] [--pushback honor|ignore]
                                            [--json PATH] [--report PATH.md] [--no-plot]

It starts its own stack (embedded Postgres in a temporary directory, every service on free
ports, authentication on: every call carries the stack's local admin key), loads --memories real
texts (LoCoMo, then LongMemEval turns) through StoreBatch with an index wait, then runs each step
for --step-s seconds: N closed-loop clients, coroutines in one asyncio loop over grpc.aio
channels (at most --max-channels; clients share them round-robin), each sending its next call
as soon as the last one ends. A call is a Recall (k=10, the gateway's default budget) or, with
probability --store-share, a Store of a further real text (no index wait). Every call carries
its own deadline: recalls the recall budget plus --margin-ms, stores --store-deadline-ms.
Whatever status comes back is counted; a refusal (RESOURCE_EXHAUSTED) is shedding, and a
client honours its `grpc-retry-pushback-ms` hint before its next call (--shed-backoff-ms when
there is none; --pushback ignore: straight back, a hostile client), and waits
--error-backoff-ms after any other error.

Per step, over the calls that complete after the first --warmup-s seconds: goodput (calls
answered OK per second), shed rate, the answered recalls' p50 / p95 / p99, every status code,
the share of answered recalls that were degraded, the benchmark's own CPU use and event-loop
lag (when the client is saturated, its latencies include that lag), and each service's CPU.
After the last step every acknowledged Store is read back with Get (refusals retried): zero
lost writes. Required, reported pass/fail: zero INTERNAL (or UNKNOWN), zero lost writes, every
answered recall within budget + margin (judged on the gateway's own handling time, from its
histogram: a client-side latency includes the load generator's own event-loop lag), at most
--max-late-share of each step's recalls DEADLINE_EXCEEDED (an error budget: calls whose
deadline passed before the gateway's answer reached the client, e.g. while they waited for the
gateway's event loop on the cores the clients share), and goodput that plateaus (every step
after the peak at least --plateau-fraction of it) instead of collapsing.
--report writes the markdown report and a PNG beside it (goodput, shed rate and latency against
offered load; matplotlib, Agg).
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

from benchmarks.harness.budget import save_png
from benchmarks.harness.load import (
    SERVER_FAULTS,
    UNAVAILABLE_CAUSES,
    Gateway,
    LoopLag,
    Outcome,
    Writes,
    back_off,
    choose,
    codes_text,
    handling_buckets,
    loaded_stack,
    machine_text,
    pyplot,
    recall,
    renice_stack,
    server_latency,
    stack_sample,
    store,
    summarize,
    supervisor_summary,
    supervisor_text,
    verify_writes,
    writes_ok,
)
from benchmarks.harness.script import machine_info, positive_ints, recallmesh_env
from benchmarks.performance.gateway_recall import (
    DATASETS,
    NAMESPACE,
)
from recallmesh.gateway.settings import GatewaySettings
from recallmesh.stack.supervisor import Stack


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=5000, help="loaded before the steps")
    parser.add_argument("--steps", type=positive_ints, default="1,10,50,100,200,500",
                        help="concurrent clients, one step each")
    parser.add_argument("--step-s", type=float, default=60.0, help="seconds per step")
    parser.add_argument("--warmup-s", type=float, default=5.0,
                        help="calls completing in a step's first seconds are not counted")
    parser.add_argument("--store-share", type=float, default=0.1,
                        help="share of calls that are a Store (the rest: Recall)")
    parser.add_argument("--margin-ms", type=float, default=250.0,
                        help="a recall's deadline is the gateway's recall budget plus this")
    parser.add_argument("--store-deadline-ms", type=float, default=2000.0)
    parser.add_argument("--max-late-share", type=float, default=0.01,
                        help="most recalls of a step that may end DEADLINE_EXCEEDED (share)")
    parser.add_argument("--pushback", choices=("honor", "ignore"), default="honor",
                        help="whether a refused client waits the server's retry hint")
    parser.add_argument("--shed-backoff-ms", type=float, default=100.0,
                        help="a refused client's wait when the refusal carries no hint")
    parser.add_argument("--error-backoff-ms", type=float, default=50.0,
                        help="a client's wait after any other error")
    parser.add_argument("--max-channels", type=int, default=100,
                        help="channels (connections) the clients share round-robin")
    parser.add_argument("--plateau-fraction", type=float, default=0.8,
                        help="goodput after the peak must stay at or above this share of it")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--json", type=Path, help="every step's figures, as JSON")
    parser.add_argument("--report", type=Path,
                        help="the markdown report; the plot goes beside it (.png)")
    parser.add_argument("--no-plot", action="store_true", help="no PNG (no matplotlib needed)")
    parser.add_argument("--stack-nice", type=int, default=10,
                        help="nice value of the stack's processes during the steps (0: as "
                             "started), so that the clients sharing the machine are not "
                             "starved by the stack they measure")
    args = parser.parse_args(argv)
    if not 0 <= args.store_share <= 1:
        parser.error("--store-share must be within 0..1")
    if args.warmup_s >= args.step_s:
        parser.error("--warmup-s must be shorter than --step-s")
    return args


async def run_step(gateway: Gateway, clients: int, args: argparse.Namespace,
                   queries: list[str], texts: list[str], writes: Writes,
                   recall_deadline_s: float, step: int) -> list[Outcome]:
    """`clients` closed-loop clients for --step-s seconds; the outcomes of the calls that
    completed after the warm-up and before the step's end (the calls in flight at the end
    complete, and count for the writes, not for the rates)."""
    outcomes: list[Outcome] = []
    started = time.monotonic()
    stop_at = started + args.step_s
    shares = (("store", args.store_share),)

    async def client(i: int) -> None:
        rng = random.Random(f"{args.seed}-{step}-{i}")
        stub = gateway.stub(i)
        while time.monotonic() < stop_at:
            if choose(rng, shares) == "store":
                text = rng.choice(texts)
                outcome, memory_id = await store(stub, NAMESPACE, text,
                                                 args.store_deadline_ms / 1000)
                writes.store_outcome(outcome, memory_id, text)
            else:
                outcome = await recall(stub, NAMESPACE, rng.choice(queries), recall_deadline_s)
            outcomes.append(outcome)
            await back_off(outcome, args.pushback == "honor", args.shed_backoff_ms,
                           args.error_backoff_ms)

    await asyncio.gather(*(client(i) for i in range(clients)))
    return [o for o in outcomes if started + args.warmup_s <= o.finished <= stop_at]


async def run_steps(stack: Stack, args: argparse.Namespace, queries: list[str],
                    texts: list[str], recall_deadline_s: float) -> tuple[list[dict], dict]:
    gateway = Gateway(stack, min(max(args.steps), args.max_channels))
    writes = Writes()
    lag = LoopLag()
    lag.start()
    steps = []
    try:
        for n, clients in enumerate(args.steps):
            print(f"{clients} clients, {args.step_s:.0f} s ...", flush=True)
            lag.take()
            services_before = stack_sample(stack)
            buckets_before = handling_buckets(stack.metrics.get("gateway"))
            cpu_before, wall_before = time.process_time(), time.monotonic()
            counted = await run_step(gateway, clients, args, queries, texts, writes,
                                     recall_deadline_s, n)
            cpu_s, wall_s = time.process_time() - cpu_before, time.monotonic() - wall_before
            services_after = stack_sample(stack)
            server = server_latency(buckets_before,
                                    handling_buckets(stack.metrics.get("gateway")),
                                    recall_deadline_s)
            row = {"clients": clients, **summarize(counted, args.step_s - args.warmup_s),
                   "server_recall": server,
                   "client_cpu_share": cpu_s / wall_s, "loop_lag": lag.take(),
                   "service_cpu_share": {
                       name: (after["cpu_s"] - services_before[name]["cpu_s"]) / wall_s
                       for name, after in services_after.items()
                       if name in services_before
                       and after["pid"] == services_before[name]["pid"]},
                   "restarted": sorted(name for name, before in services_before.items()
                                       if services_after.get(name, {}).get("pid")
                                       != before["pid"]),
                   "exited": stack.check_alive()}
            steps.append(row)
            print("  " + step_line(row), flush=True)
        print(f"reading back {len(writes.expected_live)} acknowledged writes ...", flush=True)
        check = await verify_writes(gateway, NAMESPACE, writes)
    finally:
        await lag.stop()
        await gateway.close()
    return steps, check


def step_line(r: dict) -> str:
    return (f"goodput {r['goodput_per_s']:.1f}/s, shed {r['shed_per_s']:.1f}/s, recall p50/p95/"
            f"p99 {r['recall_p50_ms']:.0f}/{r['recall_p95_ms']:.0f}/{r['recall_p99_ms']:.0f} ms,"
            f" degraded {r['degraded_share']:.1%}, client CPU {r['client_cpu_share']:.0%}, "
            f"codes: {codes_text(r['codes'])}")


def checks(steps: list[dict], writes: dict, args: argparse.Namespace,
           recall_deadline_ms: float, supervisor: dict) -> list[tuple[str, bool, str]]:
    """The issue's required checks, and that no service process exited: (name, passed,
    evidence)."""
    faults = {code: sum(r["codes"].get(code, 0) for r in steps) for code in SERVER_FAULTS}
    late = sum(r["codes_by_op"].get("recall", {}).get("DEADLINE_EXCEEDED", 0) for r in steps)
    shares = [(late_share(r), r["clients"]) for r in steps]
    worst, worst_at = max(shares, default=(0.0, 0))
    slowest_step = max(steps, key=lambda r: r["recall_max_ms"], default=None)
    slowest = slowest_step["recall_max_ms"] if slowest_step else 0.0
    servers = [r.get("server_recall") or {} for r in steps]
    over = sum(sv.get("slower", 0.0) for sv in servers)
    answered = sum(sv.get("answered", 0.0) for sv in servers)
    bound = max((sv.get("slower_than_s") or 0.0 for sv in servers), default=0.0)
    measured = all(sv.get("answered") for sv in servers)
    goodput = [r["goodput_per_s"] for r in steps]
    peak = max(range(len(goodput)), key=goodput.__getitem__) if goodput else 0
    after = goodput[peak + 1:]
    floor = args.plateau_fraction * (goodput[peak] if goodput else 0.0)
    lowest = min(after, default=None)
    unavailable: dict[str, int] = {}
    for r in steps:
        for cause, n in r.get("recall_unavailable", {}).items():
            unavailable[cause] = unavailable.get(cause, 0) + n
    database_late = unavailable.get("database late", 0)
    return [
        ("zero INTERNAL (and UNKNOWN)", not any(faults.values()), codes_text(faults)),
        ("zero lost writes", writes_ok(writes),
         f"{writes['checked_live']} acknowledged stores read back: {writes['lost']} lost, "
         f"{writes['content_changed']} changed, {writes['unverified']} unverified "
         f"({codes_text(writes['unverified_codes'])}); {writes['stores_unknown_outcome']} "
         "stores with an unknown outcome (not acknowledged, not checked)"),
        (f"answered recalls within budget + margin ({recall_deadline_ms:.0f} ms; the gateway's "
         "own handling time)", measured and over == 0,
         (f"{over:.0f} of {answered:.0f} answered recalls took the gateway over "
          f"{bound * 1000:.0f} ms" if measured else "the gateway's histogram was not read")
         + (f"; client-side, the slowest answered recall took {slowest:.0f} ms, which includes "
            "the load generator's own event-loop lag (at most "
            f"{slowest_step['loop_lag']['max_ms']:.0f} ms in that step; gRPC completes a call "
            "OK only when its answer reached the client before the deadline)"
            if slowest_step else "")),
        (f"recalls past their deadline (DEADLINE_EXCEEDED) at most {args.max_late_share:.1%} "
         "of each step's recalls", worst <= args.max_late_share,
         f"{late} in all; the most in one step: {worst:.2%} of the recalls at {worst_at} "
         "clients"),
        (f"goodput plateaus (each step after the peak >= {args.plateau_fraction:.0%} of it)",
         lowest is None or lowest >= floor,
         f"peak {goodput[peak] if goodput else 0:.1f}/s at {args.steps[peak]} clients; "
         + (f"lowest after it {lowest:.1f}/s (floor {floor:.1f}/s)" if lowest is not None
            else "the peak is the last step: no step after it")),
        ("no recall UNAVAILABLE as 'database did not answer' (the database is up throughout)",
         not database_late,
         f"{database_late} in all; recall UNAVAILABLE by cause: "
         + (codes_text(unavailable) if unavailable else "none")),
        ("no service process exited", not supervisor["events"],
         supervisor_text(supervisor) or "none exited"),
    ]


def late_share(step: dict) -> float:
    """The share of a step's completed recalls that ended DEADLINE_EXCEEDED."""
    codes = step["codes_by_op"].get("recall", {})
    return codes.get("DEADLINE_EXCEEDED", 0) / max(sum(codes.values()), 1)


def busiest(shares: dict[str, float], top: int = 2) -> str:
    """{"embedding": 1.2, "gateway": 0.4, ...} -> "embedding 120%, gateway 40%"."""
    ranked = sorted(shares.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{name} {share:.0%}" for name, share in ranked) or "—"


def server_p99(r: dict) -> str:
    """The gateway's own handling time of the step's answered recalls, from its histogram:
    the bucket bound their p99 lies under."""
    server = r.get("server_recall") or {}
    if not server.get("answered"):
        return "—"
    bound = server.get("p99_under_s")
    return "> 10000" if bound is None else f"≤ {bound * 1000:.0f}"


def server_slower(r: dict) -> str:
    server = r.get("server_recall") or {}
    return "—" if not server.get("answered") else f"{server['slower']:.0f}"


def unavailable_text(r: dict) -> str:
    """A step's recalls failed UNAVAILABLE by cause: "database late / no leg / other"."""
    by_cause = r.get("recall_unavailable", {})
    named = [cause for _, cause in UNAVAILABLE_CAUSES if cause != "database unavailable"]
    other = sum(n for cause, n in by_cause.items() if cause not in named)
    return " / ".join(str(n) for n in (*(by_cause.get(c, 0) for c in named), other))


def table(steps: list[dict]) -> list[str]:
    lines = [
        "| clients | goodput OK/s | recalls OK/s | shed/s | other errors | recall p50 ms "
        "| p95 ms | p99 ms | gateway's own p99 ms (bucket) | gateway's own over 1 s "
        "| degraded | recall UNAVAILABLE: database late / no leg / other "
        "| pushback hint p50 ms | client CPU | loop lag p99 ms "
        "| busiest services' CPU | status codes |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in steps:
        hint = "—" if r["pushback_p50_ms"] is None else f"{r['pushback_p50_ms']}"
        if r["shed_without_hint"]:
            hint += f" ({r['shed_without_hint']} without)"
        lines.append(
            f"| {r['clients']} | {r['goodput_per_s']:.1f} | {r['recalls_ok_per_s']:.1f} "
            f"| {r['shed_per_s']:.1f} | {r['errors']} | {r['recall_p50_ms']:.1f} "
            f"| {r['recall_p95_ms']:.1f} | {r['recall_p99_ms']:.1f} | {server_p99(r)} "
            f"| {server_slower(r)} | {r['degraded_share']:.1%} | {unavailable_text(r)} "
            f"| {hint} | {r['client_cpu_share']:.0%} | {r['loop_lag']['p99_ms']:.1f} "
            f"| {busiest(r['service_cpu_share'])} | {codes_text(r['codes'])} |")
    return lines


def plot(steps: list[dict], path: Path, recall_deadline_ms: float, budget_ms: int) -> None:
    plt = pyplot()
    x = [r["clients"] for r in steps]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8, 8), sharex=True)
    top.plot(x, [r["goodput_per_s"] for r in steps], "o-", label="goodput (answered OK/s)")
    top.plot(x, [r["recalls_ok_per_s"] for r in steps], "s--", label="recalls answered/s")
    top.plot(x, [r["shed_per_s"] for r in steps], "x-", label="shed (RESOURCE_EXHAUSTED/s)")
    top.set_ylabel("calls per second")
    top.set_title("recallmesh gateway under stepped load")
    top.legend()
    top.grid(True, alpha=0.3)
    for p, style in ((50, "o-"), (95, "s-"), (99, "^-")):
        bottom.plot(x, [r[f"recall_p{p}_ms"] for r in steps], style, label=f"recall p{p}")
    bottom.axhline(budget_ms, color="grey", linestyle=":", label=f"budget {budget_ms} ms")
    bottom.axhline(recall_deadline_ms, color="red", linestyle="--",
                   label=f"budget + margin {recall_deadline_ms:.0f} ms")
    bottom.set_ylabel("answered recall latency, ms")
    bottom.set_xlabel("offered load: concurrent closed-loop clients")
    bottom.legend()
    bottom.grid(True, alpha=0.3)
    if len(x) > 1 and min(x) > 0:
        bottom.set_xscale("log")
    bottom.set_xticks(x)
    bottom.set_xticklabels([str(c) for c in x])
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    save_png(fig, path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.report and not args.no_plot:
        pyplot()  # fail now, not after the run
    command = "python -m benchmarks.performance.overload " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    settings = GatewaySettings.from_env()
    budget_ms = settings.default_budget_ms
    recall_deadline_ms = budget_ms + args.margin_ms
    with loaded_stack("overload", args.datasets, args.memories) as run:
        if args.stack_nice:
            renice_stack(run.stack, args.stack_nice)
        steps, writes = asyncio.run(run_steps(run.stack, args, run.queries, run.store_texts,
                                              recall_deadline_ms / 1000))
        supervisor = supervisor_summary(run.watcher)
    loaded, load_s, startup_s = run.memories, run.load_s, run.startup_s

    result = {
        "benchmark": "overload", "command": command, "machine": machine_info(),
        "memories": loaded, "load_s": load_s, "stack_startup_s": startup_s,
        "budget_ms": budget_ms, "recall_deadline_ms": recall_deadline_ms,
        "legs": [leg.name for leg in settings.legs], "settings": recallmesh_env(),
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "steps": steps, "writes": writes, "supervisor": supervisor,
        "checks": [{"check": n, "passed": p, "evidence": e}
                   for n, p, e in checks(steps, writes, args, recall_deadline_ms,
                                                 supervisor)],
    }
    report(result, args)


def report(result: dict[str, Any], args: argparse.Namespace) -> None:
    budget_ms, deadline_ms = result["budget_ms"], result["recall_deadline_ms"]
    lines = table(result["steps"])
    verdicts = [f"- **{'PASS' if c['passed'] else 'FAIL'}** {c['check']}: {c['evidence']}"
                for c in result["checks"]]
    print("\n" + "\n".join(lines) + "\n\n" + "\n".join(verdicts))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1))
    if not args.report:
        return
    png = args.report.with_suffix(".png")
    if not args.no_plot:
        plot(result["steps"], png, deadline_ms, budget_ms)
    header = [
        "# Overload: goodput, shedding and latency against offered load",
        "",
        f"Generated by `make bench NAME=overload` (`{result['command']}`); how the run is built is "
        "in the script's docstring (`benchmarks/performance/overload.py`).",
        "",
        f"- Stack: its own (embedded Postgres, every service on this machine, authentication "
        f"on), legs {', '.join(result['legs'])}; {result['memories']} real memories loaded in "
        f"{result['load_s']:.0f} s.",
        f"- Load: per step N closed-loop clients (coroutines in one asyncio loop, "
        f"{min(max(args.steps), args.max_channels)} channels at most), {args.step_s:.0f} s a "
        f"step, the first {args.warmup_s:.0f} s not counted; {1 - args.store_share:.0%} "
        f"Recall (k=10, default budget {budget_ms} ms), {args.store_share:.0%} Store (no "
        "index wait).",
        f"- Deadlines: recall {deadline_ms:.0f} ms (budget + {args.margin_ms:.0f} ms margin; "
        f"at most {args.max_late_share:.1%} of a step's recalls may miss it), "
        f"store {args.store_deadline_ms:.0f} ms. On RESOURCE_EXHAUSTED a client "
        + ("waits the `grpc-retry-pushback-ms` hint (" f"{args.shed_backoff_ms:.0f} ms without "
           "one)" if args.pushback == "honor" else "ignores the hint and calls again at once")
        + f"; after any other error it waits {args.error_backoff_ms:.0f} ms.",
        f"- Settings (RECALLMESH_*): {result['settings'] or 'none; the defaults'}.",
        f"- Machine: {machine_text(result['machine'])}. The clients run on the same machine "
        "as the stack: "
        "\"client CPU\" is the benchmark process's CPU time over the step (100% = one core), "
        "\"loop lag\" how late its event loop woke up (latencies include it). "
        + (f"During the steps every process of the stack (services and Postgres, every "
           f"thread) runs at nice {args.stack_nice}, so that the clients, standing in for "
           "callers on machines of their own, are not starved by the stack they measure."
           if args.stack_nice else "The stack runs at the clients' priority."),
        "",
        "Goodput: calls answered OK per second (recalls and stores); shed: RESOURCE_EXHAUSTED "
        "per second; latency percentiles: answered recalls only, client-side; the gateway's "
        "own: its handling time of the answered recalls (grpc_server_handling_seconds, "
        "scraped before and after the step: the bucket bound the p99 lies under, and how "
        "many took over 1 s); degraded: "
        "share of answered recalls missing a leg; recall UNAVAILABLE: recalls that failed "
        "UNAVAILABLE, by cause (the status details: 'database did not answer' after the legs, "
        "'no retrieval leg answered', anything else); busiest services' CPU: the two service "
        "processes with the most CPU time over the step (100% = one core); status codes: "
        "every call completed in the counted part of the step.",
        "",
    ]
    if supervisor_text(result["supervisor"]):
        header += [supervisor_text(result["supervisor"]), ""]
    by_op = ["", "Status codes by operation:", ""] + [
        f"- {r['clients']} clients: " + "; ".join(
            f"{op} {codes_text(codes)}" for op, codes in r["codes_by_op"].items())
        for r in result["steps"]]
    details = [f"- {r['clients']} clients: " + "; ".join(
        f"{key}: " + ", ".join(f"\"{d}\" x{n}" for d, n in found.items())
        for key, found in r["error_details"].items())
        for r in result["steps"] if r["error_details"]]
    if details:
        by_op += ["", "What the failed calls said (the commonest status details):", "", *details]
    tail = [*by_op, "", "## Required", "", *verdicts, ""]
    w = result["writes"]
    tail += [f"Writes: {w['acknowledged_stores']} stores acknowledged, read back in "
             f"{w['seconds']:.1f} s ({w['get_retries']} Get retries after a refusal).", ""]
    if not args.no_plot:
        tail += [f"![goodput and latency against offered load]({png.name})", ""]
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text("\n".join(header + lines + tail))
    print(f"\nwrote {args.report}" + ("" if args.no_plot else f" and {png}"))


if __name__ == "__main__":
    main()
