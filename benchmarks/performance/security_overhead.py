"""What authentication and TLS cost a recall: the same memories, the same questions, through
three stacks in one run:

- `open`: plaintext, authentication off (RECALLMESH_AUTH=off): the baseline;
- `auth`: plaintext, authentication on (an API key on every recall, the internal token on
  every internal hop);
- `auth+tls`: authentication on and TLS on every hop (the client to the gateway, mutual TLS from
  the gateway to the legs, the embedding and the fusion service), what a production overlay runs.

  python -m benchmarks.performance.security_overhead [--memories 1000] [--requests 400]
                                                     [--concurrency 1,32] [--rounds 2]
                                                     [--json PATH]

The stacks serve one embedded Postgres (the first stack's), so they rank the same rows; the
memories are loaded once. Certificates come from recallmesh.stack.devcerts (a throwaway CA;
ECDSA P-256). The stacks are measured in turn, `--rounds` times per concurrency level (the order
rotates each round), and each configuration's percentiles are the mean of its rounds', so drift
on a shared machine falls on all three; every round's p95 is printed too. Client-side latency,
k=10, default budget, one long-lived channel per client (as a service's client would hold it).
The goal (issue 24): under 1 ms and 5% added at p95.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from benchmarks.harness.script import BENCH_ENV, machine_info, positive_ints, start_stack
from benchmarks.performance.gateway_recall import (
    DATASETS,
    NAMESPACE,
    load,
    read_queries,
    read_texts,
    run_load,
)
from recallmesh.stack.devcerts import make_ca, make_cert
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.v1 import memory_pb2, memory_pb2_grpc


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--requests", type=int, default=400,
                        help="recalls per configuration, concurrency level and round")
    parser.add_argument("--concurrency", type=positive_ints, default="1,32")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--report", type=Path, help="also write the table as markdown here")
    args = parser.parse_args(argv)

    texts = read_texts(args.datasets, args.memories)
    queries = read_queries(args.datasets, 2000)
    with tempfile.TemporaryDirectory(prefix="recallmesh-tls-bench-") as tmp:
        folder = Path(tmp)
        ca = make_ca(folder, "recallmesh benchmark CA")
        cert, key = make_cert(folder, ca, "recallmesh-service", "service")
        tls = {"RECALLMESH_TLS_CERT": str(cert), "RECALLMESH_TLS_KEY": str(key),
               "RECALLMESH_TLS_CA": str(folder / "ca.pem")}
        stacks: dict[str, Stack] = {}
        try:
            open_env = {"RECALLMESH_AUTH": "off"}
            stacks["open"] = Stack(env={**BENCH_ENV, "RECALLMESH_DATA_DIR": str(folder / "open"),
                                        **free_port_env(), **open_env})
            start_stack(stacks["open"])
            dsn = stacks["open"].dsn
            for name, extra in (("auth", {}), ("auth+tls", tls)):
                stacks[name] = Stack(env={**BENCH_ENV, "RECALLMESH_DATA_DIR": str(folder / name),
                                          "RECALLMESH_DSN": dsn, **free_port_env(), **extra})
                start_stack(stacks[name])
            with stacks["open"].dial() as channel:
                stub = memory_pb2_grpc.MemoryServiceStub(channel)
                print(f"loading {len(texts)} memories ...", flush=True)
                load(stub, texts)
            # Stack.dial: the stack's local admin key when authentication is on; TLS verified
            # against the stack's CA when it is set (the gateway asks no client certificate:
            # RECALLMESH_TLS_CLIENT_AUTH=internal).
            configs = {name: stack.dial for name, stack in stacks.items()}
            for connect in configs.values():  # warm-up, every stack
                with connect() as ch:
                    warm = memory_pb2_grpc.MemoryServiceStub(ch)
                    for q in queries[:30]:
                        warm.Recall(memory_pb2.RecallRequest(namespace=NAMESPACE, query=q),
                                    timeout=30)
            rows = []
            for level in args.concurrency:
                pooled: dict[str, list[dict]] = {name: [] for name in configs}
                for round_ in range(args.rounds):
                    names = list(configs)
                    order = names[round_ % len(names):] + names[:round_ % len(names)]
                    for name in order:
                        print(f"concurrency {level}, round {round_ + 1}: {name} ...", flush=True)
                        pooled[name].append(run_load(configs[name], queries, args.requests,
                                                     level))
                for name, runs in pooled.items():
                    rows.append(summary(name, level, runs))
        finally:
            for stack in reversed(stacks.values()):
                stack.stop()
    report(rows, args)


BASELINE = "open"


def summary(name: str, level: int, runs: list[dict]) -> dict:
    """One configuration at one level: the mean of its rounds' percentiles."""
    def mean(key: str) -> float:
        return sum(r[key] for r in runs) / len(runs)

    return {"config": name, "concurrency": level, "requests": sum(r["requests"] for r in runs),
            "recalls_per_s": mean("recalls_per_s"), "p50_ms": mean("client_p50_ms"),
            "p95_ms": mean("client_p95_ms"), "p99_ms": mean("client_p99_ms"),
            "degraded": sum(r["degraded"] for r in runs),
            "rounds_p95_ms": [round(r["client_p95_ms"], 2) for r in runs]}


def report(rows: list[dict], args: argparse.Namespace) -> None:
    lines = [
        f"recall through the gateway, {args.memories} memories, k=10, {args.rounds} rotating "
        f"rounds of {args.requests} recalls per configuration and concurrency level; "
        f"baseline `{BASELINE}`",
        "",
        "| concurrency | config | recalls/s | p50 ms | p95 ms | p99 ms | Δ p50 | Δ p95 "
        "| degraded | p95 per round |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        base = next(r for r in rows if r["concurrency"] == row["concurrency"]
                    and r["config"] == BASELINE)
        d50, d95 = row["p50_ms"] - base["p50_ms"], row["p95_ms"] - base["p95_ms"]
        delta = ("" if row is base else
                 f"{d50:+.2f} ms ({d50 / base['p50_ms']:+.1%}) | "
                 f"{d95:+.2f} ms ({d95 / base['p95_ms']:+.1%})")
        lines.append(f"| {row['concurrency']} | {row['config']} | {row['recalls_per_s']:.1f} | "
                     f"{row['p50_ms']:.2f} | {row['p95_ms']:.2f} | {row['p99_ms']:.2f} | "
                     f"{delta or '— | —'} | {row['degraded']} | {row['rounds_p95_ms']} |")
    saturated = sorted({r["concurrency"] for r in rows if r["degraded"] > r["requests"] / 2})
    if saturated:
        lines += ["", f"At concurrency {', '.join(map(str, saturated))} more than half the "
                  "answers were degraded: the machine is past its capacity, legs miss the "
                  "recall budget, and the percentiles there measure an overloaded machine more "
                  "than the configurations."]
    print("\n" + "\n".join(lines) + f"\n\nmachine: {machine_info()}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": machine_info(), "rows": rows}, indent=1))
    if args.report:
        command = ("python -m benchmarks.performance.security_overhead --memories "
                   f"{args.memories} --requests {args.requests} --concurrency "
                   f"{','.join(map(str, args.concurrency))} --rounds {args.rounds}")
        header = [
            "# What authentication and TLS cost a recall",
            "",
            f"Generated by `make bench NAME=security` (`{command}`); how the run is built is in "
            "the script's docstring (`benchmarks/performance/security_overhead.py`). `open`: "
            "plaintext, RECALLMESH_AUTH=off. `auth`: plaintext, an API key on every recall "
            "and the internal token on every internal hop. `auth+tls`: the same with TLS on "
            "every hop (mutual TLS inside). Client-side latency.",
            "",
            f"Machine: {machine_info()}",
            "",
        ]
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text("\n".join(header + lines) + "\n")


if __name__ == "__main__":
    main()
