"""Candidate pools: dumped once through the real stack, replayed with the gateway's own code.

  python -m benchmarks.replay.context_sweep dump --dataset ../shared/datasets/locomo \
      --out benchmarks/results/locomo/context_pool.json

`dump` loads a dataset into its own stack (as the harness does; or, with `target` and `dsn`,
into a running one, called with `api_key`: default RECALLMESH_API_KEY or the local admin key
file; `skip_ingest` when it is already loaded there), then asks the gateway for
every query's whole candidate pool: k=100 with `explain`, lexical (BM25 k1 0.9, b 0.4) +
vector, context off, so each leg's top 100 comes back with its native scores. It also records,
per memory, the memories stored next after / just before it in its thread under the gateway's
own rule (MemoryStore.hydrate_adjacent; no filters), and the top 10 the
gateway served for the baseline (`hybrid_cc_bm25t`), so a replay can be checked against it.

The replay core the replays share (context_sweep, lever_replay, model_replay,
cross_validation): `leg_lists` cuts a pool's leg lists to a depth, `fuse_and_propagate` serves
them as the gateway does (`recallmesh.services.fusion.core.fuse`, by default the convex combination,
without the importance prior and the exact-match bonus, which a pool does not record; then
`recallmesh.gateway.stages`' `contributing_legs` and `propagate_context`), `scored` gives a
replayed ranking its metrics, and `replay_table` the markdown table of replayed rows with
paired bootstrap CIs.
"""

from __future__ import annotations

import asyncio
import functools
import json
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import grpc
import psycopg

from benchmarks.harness import metrics
from benchmarks.harness.budget import compact_json
from benchmarks.harness.configs import CONFIGS
from benchmarks.harness.data import Query, load
from benchmarks.harness.runner import gateway_legs, git_commit, ingest, settle
from benchmarks.harness.script import BENCH_ENV, dial_gateway, gateway_client
from benchmarks.harness.stats import paired_bootstrap
from recallmesh.client import Client
from recallmesh.embedding_models.calibration import calibration_for
from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.gateway.settings import ALL_LEGS
from recallmesh.gateway.stages import contributing_legs, propagate_context
from recallmesh.gateway.store import MemoryStore
from recallmesh.policy import FusionSettings, RecallPolicy
from recallmesh.services.fusion.core import fuse
from recallmesh.shared.db import ADMIN, open_pool, resolve_dsn
from recallmesh.stack.supervisor import Stack, free_port_env
from recallmesh.v1 import memory_pb2, memory_pb2_grpc
from recallmesh.wire.filters import Filters
from recallmesh.wire.fusion import FusedCandidate, LegCandidate, LegList
from recallmesh.wire.validation import MAX_BUDGET_MS

K = 10
POOL_K = 100
ADJACENCY_BATCH = 500  # memories whose neighbours one query asks for


def default_setting() -> tuple[int, float, int, float, float]:
    """What a deployment serves with no settings, as a grid point."""
    policy = RecallPolicy.from_env()
    return (policy.leg_depth, policy.weight("lexical"), policy.context_hits,
            policy.context_next_weight, policy.context_prev_weight)


def stored_adjacency(dsn: str, namespaces: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """(next, prev) by corpus id for every live memory of `namespaces`: the memory stored next
    after / just before it, asked of the gateway's own MemoryStore.hydrate_adjacent (no
    filters), so a replay propagates context over exactly the neighbours the gateway finds."""
    return asyncio.run(_stored_adjacency(dsn, namespaces))


async def _stored_adjacency(dsn: str, namespaces: list[str]
                            ) -> tuple[dict[str, str], dict[str, str]]:
    pool = await open_pool(dsn, name="context-dump", query_class=ADMIN)  # an offline dump
    after: dict[str, str] = {}
    before: dict[str, str] = {}
    try:
        store = MemoryStore(pool)
        for ns in namespaces:
            async with pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT id::text, metadata->>'corpus_id' FROM memories "
                    "WHERE namespace = %s AND deleted_at IS NULL", (ns,))
                corpus = dict(await cur.fetchall())
            ids = list(corpus)
            for i in range(0, len(ids), ADJACENCY_BATCH):
                seeds = ids[i:i + ADJACENCY_BATCH]
                _, nxt, prv = await store.hydrate_adjacent(ns, seeds[:1], seeds, Filters())
                after.update((corpus[seed], corpus[m.id]) for seed, m in nxt.items())
                before.update((corpus[seed], corpus[m.id]) for seed, m in prv.items())
    finally:
        await pool.close()
    return after, before


def dump(dataset_dir: Path, out: Path, limit: int | None, target: str | None = None,
         dsn: str | None = None, skip_ingest: bool = False, namespace_tag: str = "",
         api_key: str | None = None, unanswerable: bool = False,
         corpus_sample: int | None = None, foreign: bool = False) -> None:
    """Load the dataset into an own stack (or, with `target`, a running gateway whose Postgres
    is `dsn`, called with `api_key` (default: RECALLMESH_API_KEY or the local admin key file);
    `skip_ingest` when its namespaces are already loaded, `namespace_tag` as the harness's)
    and dump every pool. With `unanswerable`, the questions nothing answers are asked too and
    their pools kept apart (the pool's "unanswerable"); `corpus_sample` as the harness's.
    With `foreign` (a set of several namespaces), every scored question is also asked in
    another namespace (FOREIGN_SCOPE: the next one in sorted order), which holds nothing of
    its qrels: what Recall gets when the namespace has nothing for the question (the pool's
    "foreign", relevant ids empty)."""
    ds = load(dataset_dir, limit, unanswerable, corpus_sample)
    ds.namespace_tag = namespace_tag
    scopes = sorted(ds.scopes)
    if foreign and len(scopes) < 2:
        raise SystemExit(f"{ds.name} has one namespace: no foreign namespace to ask in")
    asked = [(q, q.scope) for q in [*ds.queries, *ds.unanswerable]]
    if foreign:
        asked += [(q, scopes[(scopes.index(q.scope) + 1) % len(scopes)]) for q in ds.queries]

    def pools(connect: Callable[[], grpc.Channel], client: Client, database: str,
              load_first: bool) -> tuple[dict, list, list, tuple]:
        """The pools, read on a raw channel (each leg's list and score scale, which the typed
        client does not return); the load through the typed client."""
        with connect() as channel, client:
            stub = memory_pb2_grpc.MemoryServiceStub(channel)
            overrides = CONFIGS["hybrid_cc_bm25t"].overrides(gateway_legs(client))
            ingest_info = {"skipped": True}
            if load_first:
                ingest_info = ingest(client, ds)
                ingest_info["settle_s"] = settle(database)
            queries, unanswered, elsewhere = [], [], []
            for q, scope in asked:
                at_home = scope == q.scope
                entry = ask_pool(stub, overrides, ds.namespace(scope), q, at_home)
                if not at_home:
                    entry["scope"] = scope
                (queries if q.relevant and at_home else unanswered if at_home
                 else elsewhere).append(entry)
        with psycopg.connect(database) as conn:
            rows = conn.execute(
                "SELECT namespace, metadata->>'corpus_id', "
                "extract(epoch FROM created_at)::float8, metadata->>'session_id' "
                "FROM memories WHERE deleted_at IS NULL AND namespace = ANY(%s) "
                "ORDER BY namespace, created_at, id",
                ([ds.namespace(scope) for scope in ds.scopes],)).fetchall()
        adjacent = stored_adjacency(database, [ds.namespace(scope) for scope in ds.scopes])
        return ingest_info, (queries, unanswered, elsewhere), rows, adjacent

    if target is not None:
        ingest_info, (queries, unanswered, elsewhere), rows, (after, before) = pools(
            lambda: dial_gateway(target, api_key), gateway_client(target=target, api_key=api_key),
            dsn or resolve_dsn(), not skip_ingest)
    else:
        with tempfile.TemporaryDirectory(prefix="recallmesh-context-") as tmp:
            # A pool holds the lexical and vector legs' lists only: no concept extraction
            # (the indexer's slowest work on a load, for the graph leg alone).
            stack = Stack(env={**BENCH_ENV, "RECALLMESH_DATA_DIR": tmp, "RECALLMESH_LEGS": ALL_LEGS,
                               "RECALLMESH_CONCEPT_EXTRACTOR": "none", **free_port_env()})
            stack.start()
            try:
                ingest_info, (queries, unanswered, elsewhere), rows, (after, before) = pools(
                    stack.dial, gateway_client(stack), stack.dsn, True)
            finally:
                stack.stop()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "dataset": ds.name, "git_commit": git_commit(), "ingest": ingest_info,
        "timestamp": datetime.now(UTC).isoformat(), "pool_k": POOL_K,
        "queries": queries, "unanswerable": unanswered, "foreign": elsewhere,
        "next": after, "prev": before,
        "sessions": {r[1]: r[3] for r in rows if r[3]}}))
    print(f"{ds.name}: {len(queries)} pools -> {out}", flush=True)


def ask_pool(stub: memory_pb2_grpc.MemoryServiceStub, overrides: memory_pb2.FusionOverrides,
             namespace: str, q: Query, at_home: bool) -> dict:
    """One question's pool in `namespace`: each leg's top POOL_K with its native scores and
    score scale, and the top K served (relevant ids only `at_home`, its own namespace)."""
    # A pool is about ranking, not speed: the largest budget, and no answer that lost a leg
    # (a busy CPU would otherwise leave lexical-only pools).
    response = stub.Recall(memory_pb2.RecallRequest(
        namespace=namespace, query=q.text, k=POOL_K, fusion=overrides, explain=True,
        budget_ms=MAX_BUDGET_MS), timeout=60)
    served = stub.Recall(memory_pb2.RecallRequest(
        namespace=namespace, query=q.text, k=K, fusion=overrides, budget_ms=MAX_BUDGET_MS),
        timeout=60)
    if response.degraded or served.degraded:
        raise SystemExit(f"query {q.query_id}: degraded answer (a leg failed or timed out); no "
                         "pool written")
    return {
        "served_top": [h.memory.metadata["corpus_id"] for h in served.hits],
        "served_scores": [round(h.score, 4) for h in served.hits],
        "query_id": q.query_id, "category": q.category, "cluster": q.cluster,
        "relevant_ids": sorted(q.relevant) if at_home else [],
        "relevant_sessions": sorted(q.relevant_sessions or []) if at_home else [],
        "legs": {leg: [[h.memory.metadata["corpus_id"], c.rank, c.score]
                       for h in response.hits for c in h.legs if c.leg == leg]
                 for leg in ("lexical", "vector")},
        # each leg's score of a full match, where it gave one
        "scale": {s.leg: s.score_scale for s in response.legs if s.HasField("score_scale")}}


def add_elsewhere(pool_path: Path, dataset_dir: Path, other_dir: Path, limit: int | None,
                  corpus_sample: int | None = None) -> None:
    """Add to a pool each of its scored questions asked of another set's corpus (`other_dir`,
    its first namespace), which holds nothing on their subject: what Recall gets from a
    memory that was never told anything about the question (the pool's "elsewhere", relevant
    ids empty), for the relevance estimate's fit. Its memories' neighbours join the pool's."""
    pool = json.loads(pool_path.read_text())
    ds = load(dataset_dir, limit, False, corpus_sample)
    other = load(other_dir)
    other.namespace_tag = "elsewhere"
    scope = sorted(other.scopes)[0]
    other.scopes = {scope: other.scopes[scope]}
    with tempfile.TemporaryDirectory(prefix="recallmesh-elsewhere-") as tmp:
        stack = Stack(env={**BENCH_ENV, "RECALLMESH_DATA_DIR": tmp, "RECALLMESH_LEGS": ALL_LEGS,
                           "RECALLMESH_CONCEPT_EXTRACTOR": "none", **free_port_env()})
        stack.start()
        try:
            with stack.dial() as channel, gateway_client(stack) as client:
                stub = memory_pb2_grpc.MemoryServiceStub(channel)
                overrides = CONFIGS["hybrid_cc_bm25t"].overrides(gateway_legs(client))
                ingest(client, other)
                settle(stack.dsn)
                asked = [ask_pool(stub, overrides, other.namespace(scope), q, False)
                         | {"scope": f"{other.name}:{scope}"} for q in ds.queries]
            after, before = stored_adjacency(stack.dsn, [other.namespace(scope)])
        finally:
            stack.stop()
    pool["elsewhere"] = asked
    pool["next"] = {**after, **pool["next"]}
    pool["prev"] = {**before, **pool["prev"]}
    pool_path.write_text(json.dumps(pool))
    print(f"{ds.name}: {len(asked)} questions asked of {other.name} -> {pool_path}", flush=True)


COSINE = (-1.0, 1.0)  # the vector leg's theoretical range, as it reports it


@functools.cache
def served_vector_floor() -> float | None:
    """The cosine floor the vector leg reports with its list (LegStatus.score_floor): the
    default model's calibrated typical unrelated cosine, None for a model without one (the
    pools hold the default model's cosines)."""
    calibration = calibration_for(ModelManifest.load().model_id)
    return calibration.cosine_floor if calibration else None


def leg_lists(query: dict, depth: int, lexical_weight: float) -> list[LegList]:
    """The pool's leg lists cut to `depth`, lexical weighted by `lexical_weight` (vector 1),
    each with what its leg reports besides the scores, as the gateway hands them to fusion:
    the vector leg its cosine range and floor (served_vector_floor), the lexical leg its score
    scale (pools dumped before legs reported one have none)."""
    scale = query.get("scale", {})
    floor = query.get("floor", {})  # a pool variant's own floors (a lab's), else the leg's
    return [LegList(leg, lexical_weight if leg == "lexical" else 1.0,
                    [LegCandidate(i, score) for i, rank, score in sorted(
                        entries, key=lambda e: e[1]) if rank <= depth],
                    COSINE if leg == "vector" else None, scale.get(leg),
                    score_floor=floor.get(leg, served_vector_floor() if leg == "vector"
                                          else None))
            for leg, entries in query["legs"].items()]


def fuse_replayed(lists: list[LegList], method: str = "cc") -> list[FusedCandidate]:
    """The gateway's fusion as replayed: no importance prior, no exact-match bonus (a pool
    records neither importance nor which memory matched every term)."""
    return fuse(lists, FusionSettings(method=method, importance_strength=0.0, exact_bonus=0.0))


def fuse_and_propagate(pool: dict, lists: list[LegList], n: int, next_w: float,
                       prev_w: float, adjust: Callable | None = None,
                       method: str = "cc") -> list[str]:
    """What the gateway serves from these lists: fusion by `method` (no importance prior, no
    exact-match bonus), then context propagation when more than one leg contributed (the
    gateway's own rule, stages.contributing_legs: weight > 0 and a candidate). `adjust`
    (fused -> fused, ranked) lets a replayed lever rescore the fused list before propagation."""
    fused = fuse_replayed(lists, method)
    if adjust is not None:
        fused = adjust(fused)
    top = fused[:K]
    if n > 0 and contributing_legs(lists) > 1:
        top, _ = propagate_context(fused, top, pool["next"], pool["prev"], n, next_w, prev_w, K)
    return [c.memory_id for c in top]


def scored(pool: dict, query: dict, ranked: list[str]) -> dict:
    """One query's metrics row: the turn metrics of the top K of `ranked`, and where the
    dataset has sessions the official session-level recall of the whole of it
    (metrics.session_metrics)."""
    m = metrics.per_query(ranked[:K], query["relevant_ids"])
    if query["relevant_sessions"]:
        sessions = pool.get("sessions", {})
        m |= metrics.session_metrics([sessions.get(i, "") for i in ranked],
                                     query["relevant_sessions"])
    return {"category": query["category"], "metrics": m, "ranked": tuple(ranked[:K])}


def metric_names(pool: dict) -> list[str]:
    """The metrics a pool's replays report: the harness's, plus session recall_any@5 where the
    dataset has sessions."""
    return list(metrics.METRICS) + (
        ["session_recall_any@5", "session_recall_all@5"]
        if any(q["relevant_sessions"] for q in pool["queries"]) else [])


def rounded(value):
    """Floats to 4 decimals, all the JSON report needs (it holds every setting)."""
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [rounded(v) for v in value]
    return value


def write_reports(report: dict, lines: list[str], json_to: Path | None,
                  report_to: Path | None) -> None:
    """The JSON (every setting) and the markdown report, where asked for."""
    if json_to:
        json_to.parent.mkdir(parents=True, exist_ok=True)
        json_to.write_text(compact_json(report) + "\n")
    if report_to:
        report_to.write_text("\n".join(lines))


def replay_table(pool: dict, rows: dict[str, list[dict]], base_name: str,
                 compared_with: dict[str, str], first_column: str
                 ) -> tuple[dict, list[str], list[str], str]:
    """Each row's metrics and Δ (paired bootstrap CI on the dataset's metric, against
    `compared_with[row]` or `base_name`): (JSON entry, markdown table lines, metric names,
    primary metric)."""
    primary = metrics.primary(pool["dataset"])
    names = metric_names(pool)
    base = rows[base_name]
    summary = {name: metrics.summarise(r, names) for name, r in rows.items()}
    cats = list(summary[base_name][1])
    entry = {}
    lines = [f"## {pool['dataset']} ({len(base)} queries)", "",
             f"| {first_column} | " + " | ".join(names) + f" | Δ {primary} | "
             + " | ".join(cats) + " |",
             "|---|" + "---:|" * (len(names) + 1 + len(cats))]
    for name, r in rows.items():
        reference = rows[compared_with.get(name, base_name)]
        ci = paired_bootstrap([a["metrics"][primary] - b["metrics"][primary]
                               for a, b in zip(r, reference, strict=True)])
        overall, per_cat = summary[name]
        entry[name] = rounded({"overall": overall, "per_category": per_cat,
                               f"delta_{primary}": [ci.delta, ci.low, ci.high]})
        delta = "" if r is base else f"{ci.delta:+.3f} [{ci.low:+.3f}, {ci.high:+.3f}]"
        lines.append(f"| {name} | " + " | ".join(f"{overall[m]:.3f}" for m in names)
                     + f" | {delta} | "
                     + " | ".join(f"{per_cat[c][primary]:.3f}" for c in cats) + " |")
    return entry, lines, names, primary
