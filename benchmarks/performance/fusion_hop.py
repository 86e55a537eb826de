"""What the fusion service's hop costs: the gateway's gRPC Fuse round trip against in-process
fusion on the same leg lists, and a whole recall with and without the fusion service, in one
run.

  python -m benchmarks.performance.fusion_hop [--memories 1000] [--queries 200] [--repeats 5]
                                              [--requests 300] [--rounds 2] [--json PATH]
                                              [--report PATH]

It starts its own stack (embedded Postgres in a temporary directory, every service on free
ports, authentication on) and loads --memories real texts (LoCoMo turns, then LongMemEval turns).

Fusion alone: for each of --queries real questions the legs are asked here, through the
gateway's own leg clients (recallmesh/gateway/legs.py, fanout.run_leg) and with the query
embedded once, and their answers become the lists a recall fuses (fanout.answered_lists, the
deployment's weights). Four shapes: the default recall (lexical + vector, leg depth 50); every
leg (lexical, vector, graph) at depth 50 and at depth 100; and four lists of 100 (the lexical leg
asked a second time, with the other ranking, as a fourth list). On each shape's lists, --repeats
times, in alternating order: `fuse` in this process, and the gateway's fusion client
(fusion_call.FusionClient: request built, gRPC Fuse to the stack's fusion service, response
read), the call the gateway makes. Both return the same ranking; the script checks it.

A whole recall: two gateways on the stack's legs, one fusing through the fusion service
(RECALLMESH_FUSION_TARGET set), one in-process (RECALLMESH_FUSION_TARGET=local), --requests
recalls each (k=10, default legs and budget, one client), in --rounds rotating rounds; each
configuration's percentiles are the mean of its rounds'. Client-side latency.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from benchmarks.harness.script import (
    BENCH_ENV,
    gateway_client,
    machine_info,
    publish,
    start_stack,
)
from benchmarks.harness.stats import percentile
from benchmarks.performance.gateway_recall import (
    DATASETS,
    NAMESPACE,
    load,
    read_queries,
    read_texts,
    run_load,
)
from recallmesh.gateway.fanout import LegOutcome, answered_lists, run_leg
from recallmesh.gateway.fusion_call import FusionClient
from recallmesh.gateway.legs import GrpcLeg
from recallmesh.policy import FusionSettings, RecallPolicy
from recallmesh.services.embedding.client import EmbedderClient, Embeddings
from recallmesh.services.fusion.core import fuse
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.v1 import fusion_pb2
from recallmesh.wire.filters import Filters
from recallmesh.wire.fusion import (
    LegList,
    hits_from_proto,
    hits_to_proto,
    lists_to_proto,
    settings_to_proto,
)
from recallmesh.wire.retriever import LegQuery

# name -> (legs asked, leg depth, the lexical leg asked again with the other ranking)
SHAPES: dict[str, tuple[tuple[str, ...], int, bool]] = {
    "default: lexical + vector, depth 50": (("lexical", "vector"), 50, False),
    "every leg, depth 50": (("lexical", "vector", "graph"), 50, False),
    "every leg, depth 100": (("lexical", "vector", "graph"), 100, False),
    "4 lists, depth 100": (("lexical", "vector", "graph"), 100, True),
}
NEEDS_VECTOR = {"vector", "graph"}


async def leg_lists(stack: Stack, queries: Sequence[str], policy: RecallPolicy
                    ) -> dict[str, list[list[LegList]]]:
    """Per shape, the lists each question's recall would fuse (questions with no candidate in
    any list are left out)."""
    legs = {name: GrpcLeg(name, stack.endpoints[name], name in NEEDS_VECTOR)
            for name in ("lexical", "vector", "graph")}
    embedder = EmbedderClient(stack.endpoints["embedding"])
    shapes: dict[str, list[list[LegList]]] = {name: [] for name in SHAPES}
    try:
        for text in queries:
            embedded = await embedder.embed([text], "query", 30.0)
            for name, (asked, depth, second_ranking) in SHAPES.items():
                query = LegQuery(namespace=NAMESPACE, query=text, k=depth, filters=Filters(),
                                 sort_by="relevance")
                ran = await asyncio.gather(*(
                    run_leg(legs[leg], query, 30.0, _done(embedded)) for leg in asked))
                if second_ranking:
                    other = "ts_rank" if policy.lexical_ranking == "bm25" else "bm25"
                    again = await run_leg(legs["lexical"], replace(query, lexical_ranking=other),
                                          30.0)
                    ran.append(replace(again, leg="lexical_" + other))
                lists = answered_lists(_answered(ran), dict(policy.weights))
                if any(lst.candidates for lst in lists):
                    shapes[name].append(lists)
    finally:
        for leg in legs.values():
            await leg.close()
        await embedder.close()
    return shapes


def _done(embedded: Embeddings) -> asyncio.Future[Embeddings]:
    future: asyncio.Future[Embeddings] = asyncio.get_running_loop().create_future()
    future.set_result(embedded)
    return future


def _answered(ran: Sequence[LegOutcome]) -> list[LegOutcome]:
    failed = [f"{o.leg}: {o.state} {o.detail}" for o in ran if o.state != "OK"]
    if failed:
        raise SystemExit(f"error: a leg did not answer: {'; '.join(failed)}")
    return list(ran)


async def time_fusion(target: str, shapes: dict[str, list[list[LegList]]],
                      settings: FusionSettings, repeats: int) -> list[dict[str, Any]]:
    """Per shape: in-process `fuse` and the fusion service round trip, the same lists."""
    client = FusionClient(target)
    rows = []
    try:
        for lists in next(iter(shapes.values()))[:20]:  # warm-up: channel, both code paths
            fuse(lists, settings)
            await client.fuse(lists, settings, 5.0)
        for name, per_query in shapes.items():
            local_ms: list[float] = []
            remote_ms: list[float] = []
            wire_ms: list[float] = []
            differ = 0
            for i in range(repeats):
                for lists in per_query:
                    for order in ((0, 1) if i % 2 == 0 else (1, 0)):
                        start = time.perf_counter()
                        if order == 0:
                            here = fuse(lists, settings)
                            local_ms.append((time.perf_counter() - start) * 1000)
                        else:
                            there = await client.fuse(lists, settings, 5.0)
                            remote_ms.append((time.perf_counter() - start) * 1000)
                    differ += [c.memory_id for c in here] != [c.memory_id for c in there]
                    wire_ms.append(gateway_side_ms(lists, settings))
            sizes = [sum(len(lst.candidates) for lst in lists) for lists in per_query]
            rows.append({
                "shape": name, "queries": len(per_query), "calls": len(local_ms),
                "candidates_mean": sum(sizes) / max(len(sizes), 1),
                "local_p50_ms": percentile(local_ms, 50), "local_p95_ms": percentile(local_ms, 95),
                "service_p50_ms": percentile(remote_ms, 50),
                "service_p95_ms": percentile(remote_ms, 95),
                "gateway_side_p50_ms": percentile(wire_ms, 50),
                "rankings_differ": differ,
            })
    finally:
        await client.close()
    return rows


def gateway_side_ms(lists: list[LegList], settings: FusionSettings) -> float:
    """The gateway's own work in a service call, in milliseconds: the request built and
    encoded, the response (the same ranking) decoded and read."""
    response = fusion_pb2.FuseResponse()
    hits_to_proto(fuse(lists, settings), response)
    answer = response.SerializeToString()
    start = time.perf_counter()
    request = fusion_pb2.FuseRequest(settings=settings_to_proto(settings))
    lists_to_proto(lists, request)
    request.SerializeToString()
    hits_from_proto(fusion_pb2.FuseResponse.FromString(answer).hits)
    return (time.perf_counter() - start) * 1000


def whole_recall(stack: Stack, folder: Path, queries: list[str], requests: int,
                 rounds: int) -> list[dict[str, Any]]:
    """Two gateways on the stack's legs, through the fusion service and in-process."""
    fused_by = {"fusion service": stack.endpoints["fusion"], "in-process": "local"}
    gateways: dict[str, Stack] = {}
    try:
        for name, target in fused_by.items():
            gateways[name] = Stack(env={
                **BENCH_ENV, "RECALLMESH_DATA_DIR": str(folder / name.replace(" ", "-")),
                "RECALLMESH_DSN": stack.dsn, "RECALLMESH_INTERNAL_TOKEN": stack.internal_token,
                **{f"RECALLMESH_{s.upper()}_TARGET": stack.endpoints[s]
                   for s in ("lexical", "vector", "graph", "embedding")},
                **{k: v for k, v in free_port_env().items() if k.startswith("RECALLMESH_GATEWAY")},
                "RECALLMESH_FUSION_TARGET": target}, services=("gateway",))
            start_stack(gateways[name])
            with gateway_client(gateways[name]) as client:  # warm-up
                for q in queries[:30]:
                    client.recall(q, namespace=NAMESPACE, timeout=30)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in gateways}
        names = list(gateways)
        for round_ in range(rounds):
            for name in names[round_ % 2:] + names[:round_ % 2]:
                print(f"whole recall, round {round_ + 1}: {name} ...", flush=True)
                runs[name].append(run_load(gateways[name].dial, queries, requests, 1))
    finally:
        for gateway in gateways.values():
            gateway.stop()
    rows = []
    for name, done in runs.items():
        def mean(key: str, done: list[dict[str, Any]] = done) -> float:
            return float(sum(r[key] for r in done) / len(done))

        rows.append({"fusion": name, "requests": sum(r["requests"] for r in done),
                     "p50_ms": mean("client_p50_ms"), "p95_ms": mean("client_p95_ms"),
                     "gateway_p50_ms": mean("gateway_p50_ms"),
                     "local_fusion": sum(r["local_fusion"] for r in done),
                     "degraded": sum(r["degraded"] for r in done)})
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200, help="questions whose lists are fused")
    parser.add_argument("--repeats", type=int, default=5, help="fusions of each question's lists")
    parser.add_argument("--requests", type=int, default=300,
                        help="whole recalls per configuration and round (0: none)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--report", type=Path, help="also write the tables as markdown here")
    args = parser.parse_args(argv)

    texts = read_texts(args.datasets, args.memories)
    queries = read_queries(args.datasets, 2000)
    args.load_before = os.getloadavg()[0]  # a shared machine's other work shows in both sides
    policy = RecallPolicy.from_env()
    settings = policy.fusion_settings("relevance")
    with tempfile.TemporaryDirectory(prefix="recallmesh-fusion-bench-") as tmp:
        folder = Path(tmp)
        stack = Stack(env={**BENCH_ENV, "RECALLMESH_DATA_DIR": str(folder / "stack"),
                           **free_port_env()})
        start_stack(stack)
        try:
            with gateway_client(stack) as client:
                print(f"loading {len(texts)} memories ...", flush=True)
                load(client, texts)
            os.environ["RECALLMESH_INTERNAL_TOKEN"] = stack.internal_token  # this process's
            print(f"asking the legs {args.queries} questions ...", flush=True)      # clients
            shapes = asyncio.run(leg_lists(stack, queries[: args.queries], policy))
            print("fusing ...", flush=True)
            fusion_rows = asyncio.run(time_fusion(stack.endpoints["fusion"], shapes, settings,
                                                  args.repeats))
            recall_rows = (whole_recall(stack, folder, queries, args.requests, args.rounds)
                           if args.requests > 0 else [])
        finally:
            stack.stop()
    report(fusion_rows, recall_rows, settings, args)


def report(fusion_rows: list[dict[str, Any]], recall_rows: list[dict[str, Any]],
           settings: FusionSettings, args: argparse.Namespace) -> None:
    lines = [
        f"fusion alone ({settings.method}), the same lists fused in this process and by the "
        f"fusion service (gRPC Fuse over localhost), {args.repeats} times each, alternating; "
        "the call's work in the gateway: the request built and encoded, the answer decoded "
        "(CPU the service does not take off the gateway)",
        "",
        "| lists | questions | candidates (mean) | in-process p50 / p95 ms "
        "| fusion service p50 / p95 ms | the hop p50 / p95 ms | the call's work in the "
        "gateway p50 ms | rankings differ |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in fusion_rows:
        lines.append(
            f"| {r['shape']} | {r['queries']} | {r['candidates_mean']:.0f} "
            f"| {r['local_p50_ms']:.3f} / {r['local_p95_ms']:.3f} "
            f"| {r['service_p50_ms']:.3f} / {r['service_p95_ms']:.3f} "
            f"| {r['service_p50_ms'] - r['local_p50_ms']:+.3f} / "
            f"{r['service_p95_ms'] - r['local_p95_ms']:+.3f} | {r['gateway_side_p50_ms']:.3f} "
            f"| {r['rankings_differ']} |")
    if recall_rows:
        base = next(r for r in recall_rows if r["fusion"] == "in-process")
        lines += [
            "",
            f"a whole recall, {args.memories} memories, k=10, default legs, one client, "
            f"{args.rounds} rotating rounds of {args.requests} recalls per configuration",
            "",
            "| fusion | recalls | p50 ms | p95 ms | gateway p50 ms | Δ p50 / p95 ms "
            "| fused in-process | degraded |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in recall_rows:
            delta = ("—" if r is base else f"{r['p50_ms'] - base['p50_ms']:+.2f} / "
                     f"{r['p95_ms'] - base['p95_ms']:+.2f}")
            lines.append(f"| {r['fusion']} | {r['requests']} | {r['p50_ms']:.2f} "
                         f"| {r['p95_ms']:.2f} | {r['gateway_p50_ms']:.2f} | {delta} "
                         f"| {r['local_fusion']} | {r['degraded']} |")
    machine = machine_info()
    lines += ["", f"Load average (1 min) of the machine: {args.load_before:.1f} at the start, "
              f"{os.getloadavg()[0]:.1f} at the end (this run's own work included)."]
    command = (f"python -m benchmarks.performance.fusion_hop --memories {args.memories} "
               f"--queries {args.queries} --repeats {args.repeats} --requests "
               f"{args.requests} --rounds {args.rounds}")
    header = [
        "# What the fusion service's hop costs",
        "",
        f"Generated by `make bench NAME=fusion-hop` (`{command}`); how the run is built is in "
        "the script's docstring (`benchmarks/performance/fusion_hop.py`). What was decided "
        "from it: docs/decisions/0016-where-fusion-runs.md.",
        "",
        f"Machine: {machine}",
        "",
    ]
    publish("\n".join(header + lines) + "\n", args.report, args.json,
            {"machine": machine, "fusion": fusion_rows, "recall": recall_rows}, indent=1)

if __name__ == "__main__":
    main()
