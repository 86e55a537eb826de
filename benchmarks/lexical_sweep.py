"""The lexical leg's BM25 settings and a query stop list, swept on its SQL alone.

  python -m benchmarks.lexical_sweep [--datasets ../shared/datasets/locomo,...]
      [--out benchmarks/reports/lexical_sweep.json] [--report-to benchmarks/reports/lexical.md]

Each dataset is loaded into a throwaway embedded Postgres (migrated schema, memories only: no
embeddings, no services), and every query is ranked by the lexical leg's own SQL
(recallmesh/legs/lexical/core.py) under each variant: ts_rank (the baseline), BM25 over a grid of
k1 / b, BM25 k1=0.9 b=0.4 as it was scored before the postings table (unnesting every
matching memory's vector; same ranking, slower), and BM25 k1=0.9 b=0.4 with an extra ~300-word
English stop list removed from the query (the stop-list lever: Postgres's `english`
configuration already drops its own 127 stop words). The shipped BM25 is also timed right after
the load, before ANALYZE (autovacuum is off for the load), as a fresh deployment runs it before
autoanalyze: its plan must not depend on planner statistics. Only the lexical leg is measured here;
the fused configurations run through the harness (`make bench`). Metric: recall@10 (nDCG@10
for SciFact), per question type.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import psycopg

from benchmarks.harness import data, metrics
from recallmesh.api.filters import Filters
from recallmesh.legs.lexical import core
from recallmesh.platform.db import embedded_dsn, start_embedded
from recallmesh.platform.migrations import apply_migrations

# Function words, pronouns, question words, chat filler and light verbs; stemmed by Postgres
# at query time, so inflections go too.
STOP_WORDS = """a about above across after afterwards again against all almost alone along already
also although always am among amongst an and another any anyhow anyone anything anyway anywhere
are around as at back be became because become becomes becoming been before beforehand behind
being below beside besides between beyond both but by can cannot could did do does doing done
down due during each either else elsewhere enough even ever every everyone everything everywhere
except few for former formerly from further had has have having he hence her here hereafter
hereby herein hereupon hers herself him himself his how however i if in indeed into is it its
itself just last latter latterly least less many may me meanwhile might mine more moreover most
mostly much must my myself namely neither never nevertheless next no nobody none noone nor not
nothing now nowhere of off often on once one only onto or other others otherwise our ours
ourselves out over own per perhaps please quite rather re same seem seemed seeming seems several
she should since so some somehow someone something sometime sometimes somewhere still such than
that the their theirs them themselves then thence there thereafter thereby therefore therein
thereupon these they this those though through throughout thru thus to together too toward
towards under until up upon us very via was we well were what whatever when whence whenever where
whereafter whereas whereby wherein whereupon wherever whether which while whither who whoever
whole whom whose why will with within without would yet you your yours yourself yourselves yeah
yes oh hey hi wow really actually like get got gets getting go goes going gone went make made
makes making lot lots thing things kind sort bit way ways maybe sure thanks thank definitely
pretty totally""".split()
LIGHT_VERBS = frozenset("like get got gets getting go goes going gone went make made makes "
                        "making".split())

DATASETS = ("locomo", "scifact", "longmemeval")
# (name, ranking, k1, b, stop words)
VARIANTS = [("ts_rank", "ts_rank", None, None, ()),
            ("bm25 k1=1.2 b=0.75", "bm25", 1.2, 0.75, ()),
            ("bm25 k1=0.9 b=0.4 (default)", "bm25", 0.9, 0.4, ()),
            ("bm25 k1=0.9 b=0.4, unnesting vectors (before 0006)", "bm25_unnest", 0.9, 0.4, ()),
            ("bm25 k1=0.9 b=0.4 + stop list", "bm25", 0.9, 0.4, tuple(STOP_WORDS)),
            ("bm25 k1=0.9 b=0.4 + stop list without light verbs", "bm25", 0.9, 0.4,
             tuple(w for w in STOP_WORDS if w not in LIGHT_VERBS)),
            ("bm25 k1=1.2 b=0.4", "bm25", 1.2, 0.4, ()),
            ("bm25 k1=1.5 b=0.5", "bm25", 1.5, 0.5, ()),
            ("bm25 k1=0.6 b=0.3", "bm25", 0.6, 0.3, ()),
            ("bm25 k1=0.9 b=0.2", "bm25", 0.9, 0.2, ())]
STATS_TABLES = ("memories", "memory_lexemes", "lexeme_stats", "namespace_stats")
_TERMS = "SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(query)s))) AS lexeme"
# BM25 as the lexical leg scored it before the postings of migrations/0006: every memory that
# matches any query term has its whole vector unnested and joined with the terms' idf. Kept to
# show that the postings give the same ranking, and what they save.
UNNEST_BM25_SQL = """
WITH q AS (SELECT plainto_tsquery('english', %(query)s) AS and_q),
qq AS (SELECT and_q, replace(and_q::text, ' & ', ' | ')::tsquery AS or_q FROM q),
stats AS (
    SELECT greatest(docs, 1) AS docs, greatest(total_len::float8 / greatest(docs, 1), 1) AS avgdl
    FROM namespace_stats WHERE namespace = %(ns)s
), idf AS (
    SELECT t.lexeme,
           ln(1 + (s.docs - coalesce(l.df, 0) + 0.5) / (coalesce(l.df, 0) + 0.5)) AS idf
    FROM (SELECT DISTINCT unnest(tsvector_to_array(to_tsvector('english', %(query)s)))
          AS lexeme) t
    CROSS JOIN stats s
    LEFT JOIN lexeme_stats l ON l.namespace = %(ns)s AND l.lexeme = t.lexeme
), hits AS (
    SELECT m.id, m.importance,
           (SELECT sum(x.idf * x.tf * (%(k1)s + 1)
                       / (x.tf + %(k1)s * (1 - %(b)s + %(b)s * x.dl / s.avgdl)))
            FROM (SELECT i.idf, coalesce(array_length(u.positions, 1), 1) AS tf,
                         recallmesh_tsvector_length(m.search_vector) AS dl
                  FROM unnest(m.search_vector) u JOIN idf i ON i.lexeme = u.lexeme) x
           ) AS score
    FROM memories m, qq, stats s
    WHERE m.namespace = %(ns)s AND m.deleted_at IS NULL AND m.search_vector @@ qq.or_q
)
SELECT id::text, score, score, 1, importance FROM hits
ORDER BY score DESC, importance DESC, id LIMIT %(k)s
"""


def variant_sql(ranking: str, stop_words: tuple[str, ...]) -> str:
    if ranking == "ts_rank":
        return core.build_search_sql(Filters(), "relevance")[0]
    if ranking == "bm25_unnest":
        return UNNEST_BM25_SQL
    sql = core.build_bm25_sql(Filters(), "relevance")[0]
    if stop_words:
        assert _TERMS in sql, "the BM25 statement's term list changed; update the sweep"
        sql = sql.replace(_TERMS, _TERMS + "\n    EXCEPT SELECT unnest(tsvector_to_array("
                          "to_tsvector('english', %(stop)s)))")
    return sql


def rank_all(conn, sql: str, ds, corpus_of: dict[str, str], k1, b,
             stop: tuple[str, ...] = ()) -> tuple[dict[str, list[str]], list[float]]:
    """Every query's top 10 corpus ids under one statement, and the statement's sorted times."""
    ranked, lat = {}, []
    for q in ds.queries:
        t0 = time.perf_counter()
        hits = conn.execute(sql, {"ns": ds.namespace(q.scope), "query": q.text, "k": 10,
                                  "or_min_rank": 0.01, "k1": k1, "b": b,
                                  "stop": " ".join(stop)}).fetchall()
        lat.append(time.perf_counter() - t0)
        ranked[q.query_id] = [corpus_of[h[0]] for h in hits]
    return ranked, sorted(lat)


def sweep(dataset_dir: Path, dsn: str) -> dict:
    ds = data.load(dataset_dir)
    metric = "ndcg@10" if ds.name == "scifact" else "recall@10"
    corpus_of: dict[str, str] = {}
    started = time.perf_counter()
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in STATS_TABLES:  # statistics only from the explicit ANALYZE below
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = off)")
        for scope, memories in ds.scopes.items():
            with conn.transaction(), conn.cursor() as cur:
                for m in memories:
                    cur.execute("INSERT INTO memories (namespace, content) VALUES (%s, %s) "
                                "RETURNING id::text", (ds.namespace(scope), m.content))
                    corpus_of[cur.fetchone()[0]] = m.corpus_id
        load_s = time.perf_counter() - started
        # The shipped BM25 right after the load, before ANALYZE (no or stale planner
        # statistics, as in a fresh deployment before autoanalyze): same ranking, and how slow.
        _, _, k1, b, _ = VARIANTS[2]
        unanalyzed, lat_unanalyzed = rank_all(conn, variant_sql("bm25", ()), ds, corpus_of, k1, b)
        conn.execute("ANALYZE")
        for table in STATS_TABLES:
            conn.execute(f"ALTER TABLE {table} RESET (autovacuum_enabled)")
        rows = []
        rankings: dict[str, dict[str, list[str]]] = {}
        for name, ranking, k1, b, stop in VARIANTS:
            ranked, lat = rank_all(conn, variant_sql(ranking, stop), ds, corpus_of, k1, b, stop)
            rankings[name] = ranked
            scores: dict[str, list[float]] = {}
            for q in ds.queries:
                value = (metrics.ndcg_at(ranked[q.query_id], q.relevant, 10)
                         if metric == "ndcg@10"
                         else metrics.recall_at(ranked[q.query_id], q.relevant, 10))
                scores.setdefault(q.category, []).append(value)
            every = [v for vs in scores.values() for v in vs]
            rows.append({"variant": name, "ranking": ranking, "k1": k1, "b": b,
                         "stop_words": len(stop), metric: sum(every) / len(every),
                         "per_category": {c: sum(v) / len(v) for c, v in sorted(scores.items())},
                         "sql_p50_ms": 1000 * lat[len(lat) // 2],
                         "sql_p95_ms": 1000 * lat[int(0.95 * (len(lat) - 1))]})
            print(f"{ds.name:12s} {name:52s} {rows[-1][metric]:.4f}", flush=True)
    postings, unnest = rankings[VARIANTS[2][0]], rankings[VARIANTS[3][0]]
    same = sum(postings[q] == unnest[q] for q in postings)
    print(f"{ds.name:12s} postings vs unnesting: identical top 10 for {same}/{len(postings)}")
    before = {"sql_p50_ms": 1000 * lat_unanalyzed[len(lat_unanalyzed) // 2],
              "sql_p95_ms": 1000 * lat_unanalyzed[int(0.95 * (len(lat_unanalyzed) - 1))],
              "max_ms": 1000 * lat_unanalyzed[-1],
              "same_top10": sum(unanalyzed[q] == postings[q] for q in postings)}
    print(f"{ds.name:12s} before ANALYZE: p50 {before['sql_p50_ms']:.1f} ms, p95 "
          f"{before['sql_p95_ms']:.1f} ms, same top 10 for {before['same_top10']}/{len(postings)}")
    return {"dataset": ds.name, "postings_equal_unnest_top10": [same, len(postings)],
            "default_before_analyze": before,
            "path": str(dataset_dir), "files_sha256": ds.files_sha256,
            "queries": len(ds.queries), "memories": ds.memories_stored, "metric": metric,
            "load_s": round(load_s, 1), "variants": rows}


def markdown(results: list[dict]) -> str:
    out = ["# Lexical leg: BM25 settings and the stop list", "",
           "Generated by `make bench-lexical-sweep` (`python -m benchmarks.lexical_sweep`); do not "
           "edit by hand. The lexical leg's SQL alone on each dev split, memories loaded without "
           "embeddings into a throwaway embedded Postgres; `default` marks the settings the leg "
           "ships with. SQL latency is the statement alone on this machine (no gRPC).", ""]
    for r in results:
        same, total = r["postings_equal_unnest_top10"]
        cats = list(r["variants"][0]["per_category"])
        out += [f"## {r['dataset']} ({r['queries']} queries, {r['memories']:,} memories, "
                f"{r['metric']})", "",
                "| variant | " + r["metric"] + " | " + " | ".join(cats) + " | SQL p50 / p95 ms |",
                "|---|---:|" + "---:|" * len(cats) + "---:|"]
        for v in r["variants"]:
            out.append(f"| {v['variant']} | {v[r['metric']]:.3f} | "
                       + " | ".join(f"{v['per_category'][c]:.3f}" for c in cats)
                       + f" | {v['sql_p50_ms']:.1f} / {v['sql_p95_ms']:.1f} |")
        before = r["default_before_analyze"]
        out += ["", f"BM25 from postings and by unnesting every matching vector: identical top 10 "
                f"for {same} of {total} queries. The default BM25 right after the load, before "
                f"ANALYZE (no or stale planner statistics): SQL p50 {before['sql_p50_ms']:.1f} / "
                f"p95 {before['sql_p95_ms']:.1f} / max {before['max_ms']:.1f} ms, same top 10 "
                f"for {before['same_top10']} of {total} queries.", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.lexical_sweep",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default=",".join(f"../shared/datasets/{d}"
                                                       for d in DATASETS))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/reports/lexical_sweep.json"))
    parser.add_argument("--report-to", type=Path, default=None)
    args = parser.parse_args(argv)
    pg_dir = Path(tempfile.mkdtemp(prefix="recallmesh-lexical-sweep-"))
    try:
        server = start_embedded(pg_dir / "pg", cleanup_mode="delete")
        dsn = embedded_dsn(server)
        apply_migrations(dsn)
        results = [sweep(Path(d), dsn) for d in args.datasets.split(",") if d.strip()]
    finally:
        shutil.rmtree(pg_dir, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    if args.report_to:
        args.report_to.write_text(markdown(results) + "\n")


if __name__ == "__main__":
    main()
