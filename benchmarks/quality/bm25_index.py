"""The lexical leg's BM25 from the pg_textsearch index against its SQL BM25, on every dev split
loaded into one database (docs/decisions/0018-bm25-index.md).

  python -m benchmarks.quality.bm25_index [--sets locomo,longmemeval,...] [--limit N]
      [--report-to FILE.md] [--json FILE]

Every set's memories are written into one embedded Postgres with pg_textsearch (each set's
namespaces as the harness names them: a LoCoMo conversation, a LongMemEval haystack, SciFact's
and XQuAD's one corpus, MADial's users), so the index holds namespaces whose vocabularies differ
(chat turns, biomedical abstracts, encyclopaedia paragraphs in English, German and Chinese,
memory summaries) and its statistics are the mix of them all. The rows are written as the
gateway writes them (content, the CJK pairs in keywords, created_at); the triggers keep the
SQL BM25's per-namespace statistics and postings. Then every scored question is asked of the
lexical leg's core three ways, k = 50 (the depth the gateway asks of the leg):

  - `sql`: today's statements over the postings, per-namespace statistics;
  - `index`: the leg's index statement (the index finds 2k candidates best index-wide score
    first with every filter inside the scan; they are scored with the namespace's statistics),
    forced for every question (in service it runs only where the query's terms bring many
    postings);
  - `index-wide`: the index's own order and score (index-wide statistics), what the leg would
    answer without scoring the candidates again.

Reported per set: the set's metric at 10 for each way, each way minus `sql` with a 95% cluster
bootstrap interval (clusters: conversations, haystacks, questions) and the clusters up and down;
and how often the 50 hits are `sql`'s own (ids in order), the first 10 (as a set), and the scores.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from benchmarks.harness.data import Dataset, dataset_path, load
from benchmarks.harness.metrics import ndcg_at, primary, recall_at
from benchmarks.harness.script import log, machine_info, publish
from benchmarks.harness.stats import cluster_bootstrap
from recallmesh.migrations.bm25_index import INDEX_NAME, bm25_engine
from recallmesh.migrations.vector_schema import prepare_database
from recallmesh.services.lexical.core import LexicalRetriever
from recallmesh.services.lexical.settings import LexicalSettings
from recallmesh.shared.cjk import index_terms, query_terms
from recallmesh.shared.db import open_pool
from recallmesh.shared.embedded import embedded_dsn, start_embedded

SETS = ("locomo", "longmemeval", "scifact", "madial_en", "madial_zh", "xquad_de", "xquad_en",
        "xquad_zh")
WAYS = ("sql", "index", "index-wide")
DEPTH = 50  # what the gateway asks of the leg (RECALLMESH_LEG_DEPTH's default)

# The index's own answer: its order and its (negated) index-wide score.
INDEX_WIDE = f"""SELECT m.id::text FROM memories m
WHERE m.namespace = %(ns)s AND m.deleted_at IS NULL
ORDER BY m.lexical_text <@> to_bm25query(%(q)s, '{INDEX_NAME}') LIMIT %(k)s"""


def store(conn: psycopg.Connection, dataset: Dataset) -> dict[str, str]:
    """The set's memories, one COPY per set; the memory id of each corpus id."""
    ids: dict[str, str] = {}
    with conn.cursor() as cur:
        for scope, memories in dataset.scopes.items():
            ns = dataset.namespace(scope)
            with cur.copy("COPY memories (namespace, content, keywords, created_at, metadata) "
                          "FROM STDIN") as copy:
                for m in memories:
                    copy.write_row((ns, m.content, index_terms(m.content),
                                    m.created_at or datetime.now(UTC),
                                    Jsonb({"corpus_id": m.corpus_id})))
            for memory_id, corpus_id in cur.execute(
                    "SELECT id::text, metadata->>'corpus_id' FROM memories WHERE namespace = %s",
                    (ns,)).fetchall():
                ids[memory_id] = corpus_id
    return ids


async def ask(dsn: str, datasets: dict[str, Dataset], ids: dict[str, str],
              settings: LexicalSettings) -> dict[str, dict[str, list[dict[str, Any]]]]:
    pool = await open_pool(dsn, name="bm25-index-quality")
    kwargs: dict[str, Any] = {"ranking": "bm25", "k1": settings.bm25_k1, "b": settings.bm25_b}
    sql = LexicalRetriever(pool, **kwargs)
    index = LexicalRetriever(pool, **kwargs, bm25_index=True, index_min_postings=0)
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    try:
        for name, dataset in datasets.items():
            rows: dict[str, list[dict[str, Any]]] = {way: [] for way in WAYS}
            for n, q in enumerate(dataset.queries):
                ns = dataset.namespace(q.scope)
                a, b = await sql.search(ns, q.text, DEPTH), await index.search(ns, q.text, DEPTH)
                async with pool.connection() as conn:
                    cur = await conn.execute(INDEX_WIDE,
                                             {"ns": ns, "q": query_terms(q.text), "k": DEPTH})
                    wide = [r[0] for r in await cur.fetchall()]
                for way, hits, scores, engine in (
                        ("sql", [h.memory_id for h in a.hits], [h.score for h in a.hits],
                         a.engine),
                        ("index", [h.memory_id for h in b.hits], [h.score for h in b.hits],
                         b.engine),
                        ("index-wide", wide, [], "index")):
                    rows[way].append({"query": q.query_id, "cluster": q.cluster or q.scope,
                                      "ranked": [ids[i] for i in hits], "ids": hits,
                                      "scores": scores, "engine": engine})
                if n % 200 == 0:
                    log(f"{name}: {n} of {len(dataset.queries)}")
            out[name] = rows
    finally:
        await pool.close()
    return out


def metric(name: str, ranked: list[str], relevant: frozenset[str]) -> float:
    return (ndcg_at(ranked, relevant, 10) if primary(name) == "ndcg@10"
            else recall_at(ranked, relevant, 10))


def summarise(datasets: dict[str, Dataset], answers: dict[str, Any]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for name, rows in answers.items():
        relevant = {q.query_id: q.relevant for q in datasets[name].queries}
        clusters = [r["cluster"] for r in rows["sql"]]
        values = {way: [metric(name, r["ranked"], relevant[r["query"]]) for r in rows[way]]
                  for way in WAYS}
        entry: dict[str, Any] = {"queries": len(clusters), "clusters": len(set(clusters)),
                                 "metric": primary(name),
                                 "mean": {w: sum(v) / len(v) for w, v in values.items()}}
        for way in WAYS[1:]:
            deltas = [x - y for x, y in zip(values[way], values["sql"], strict=True)]
            ci = cluster_bootstrap(deltas, clusters)
            per: dict[str, float] = {}
            for c, d in zip(clusters, deltas, strict=True):
                per[c] = per.get(c, 0.0) + d
            entry[way] = {"delta": ci.delta, "low": ci.low, "high": ci.high,
                          "up": sum(1 for d in per.values() if d > 1e-12),
                          "down": sum(1 for d in per.values() if d < -1e-12)}
        same = [(x["ids"] == y["ids"], set(x["ids"][:10]) == set(y["ids"][:10]),
                 x["scores"] == y["scores"][:len(x["scores"])] if x["ids"] == y["ids"] else None)
                for x, y in zip(rows["sql"], rows["index"], strict=True)]
        entry["same_50"] = sum(s[0] for s in same)
        entry["same_top10"] = sum(s[1] for s in same)
        entry["same_scores"] = sum(1 for s in same if s[2])
        entry["wide_same_top10"] = sum(
            set(x["ids"][:10]) == set(y["ids"][:10])
            for x, y in zip(rows["sql"], rows["index-wide"], strict=True))
        summary[name] = entry
    return summary


def report(r: dict[str, Any], argv: list[str]) -> str:
    lines = [
        "# The lexical leg's BM25: the pg_textsearch index against the SQL statements",
        "",
        f"Generated by `python -m benchmarks.quality.bm25_index {' '.join(argv)}`. What is "
        "loaded, asked and compared: the script's docstring (every set in one database; each "
        "way asked for 50 hits; the index statement forced for every question).",
        "",
        f"- Memories in the database: {r['memories']:,} in {r['namespaces']:,} namespaces; "
        f"engine {r['engine']}; index built in {r['index_s']:.1f} s "
        f"({r['index_mib']:.1f} MiB).",
        "- Machine: " + ", ".join(f"{k} {v}" for k, v in machine_info().items()),
        "",
        "| set | questions (clusters) | metric | sql | index | index − sql [95% cluster CI] "
        "↑↓ | index-wide | index-wide − sql [95% cluster CI] ↑↓ |",
        "|---|---|---|---:|---:|---|---:|---|",
    ]
    for name, e in r["sets"].items():
        m = e["mean"]
        cells = [f"{e[w]['delta']:+.4f} [{e[w]['low']:+.4f}, {e[w]['high']:+.4f}] "
                 f"{e[w]['up']}↑ {e[w]['down']}↓" for w in WAYS[1:]]
        lines.append(f"| {name} | {e['queries']} ({e['clusters']}) | {e['metric']} | "
                     f"{m['sql']:.4f} | {m['index']:.4f} | {cells[0]} | {m['index-wide']:.4f} "
                     f"| {cells[1]} |")
    lines += ["", "How often a way's answer is the SQL statement's (questions):", "",
              "| set | index: the same 50 in order | index: same scores | index: same first 10 "
              "| index-wide: same first 10 |", "|---|---:|---:|---:|---:|"]
    for name, e in r["sets"].items():
        lines.append(f"| {name} | {e['same_50']} of {e['queries']} | {e['same_scores']} | "
                     f"{e['same_top10']} | {e['wide_same_top10']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--limit", type=int, help="the first N scored questions of each set")
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    datasets = {name: load(dataset_path(name), limit=args.limit)
                for name in args.sets.split(",")}
    with tempfile.TemporaryDirectory(prefix="bm25-index-") as tmp:
        server = start_embedded(Path(tmp) / "pg", cleanup_mode="delete", textsearch=True)
        dsn = embedded_dsn(server)
        with psycopg.connect(dsn, autocommit=True) as conn:
            apply = time.perf_counter()
            prepare_database(dsn)  # migrations, the vector column, the (empty) BM25 index
            conn.execute(f"DROP INDEX {INDEX_NAME}")
            ids: dict[str, str] = {}
            for name, dataset in datasets.items():
                log(f"storing {name}: {dataset.memories_stored} memories")
                ids.update(store(conn, dataset))
            conn.execute("VACUUM ANALYZE")  # every table: the postings too
            built = time.perf_counter()
            prepare_database(dsn)  # builds the index over what is stored
            index_s = time.perf_counter() - built
            engine = bm25_engine(conn)
            size = conn.execute("SELECT pg_relation_size(%s)", (INDEX_NAME,)).fetchone()
            namespaces = conn.execute("SELECT count(DISTINCT namespace) FROM memories").fetchone()
        log(f"loaded in {time.perf_counter() - apply:.0f} s; asking")
        answers = asyncio.run(ask(dsn, datasets, ids, LexicalSettings.from_env()))
        server.cleanup()
    result = {"memories": len(ids), "namespaces": namespaces[0] if namespaces else 0,
              "engine": engine, "index_s": index_s,
              "index_mib": (size[0] if size else 0) / 2 ** 20,
              "sets": summarise(datasets, answers)}
    publish(report(result, argv), args.report_to, args.json, result)


if __name__ == "__main__":
    main()
