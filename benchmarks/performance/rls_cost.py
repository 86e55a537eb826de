"""What Postgres row-level security keyed on the request's namespace would cost the legs' reads
(issue 24, "Trust": a second wall behind the `namespace = %(ns)s` every statement carries).

  python -m benchmarks.performance.rls_cost [--namespaces 20] [--per-namespace 2000]
      [--rounds 6] [--queries 150] [--k 10] [--report PATH] [--json PATH]

One Postgres (a throwaway embedded one, or the server RECALLMESH_DSN points at; its role must be
allowed to create databases and roles), one database, `rls_bench`:
  1. migrated (prepare_database) and loaded with --namespaces namespaces of --per-namespace real
     texts each (LoCoMo, then LongMemEval turns, cut to --max-chars), every row with a random unit
     vector of the configured model's dimension, generated in SQL from a fixed seed (no model
     runs) and stored as that model's, so the vector leg's SQL ranks it. The HNSW index is built
     after the load (the schema's own create_hnsw_index), then VACUUM ANALYZE;
  2. two login roles that own nothing, with plain SELECT grants: `rls_bench_today` with
     BYPASSRLS, `rls_bench_app` without;
  3. every table with a `namespace` column gets ENABLE and FORCE ROW LEVEL SECURITY and the policy
        USING (namespace = current_setting('recallmesh.namespace', true)).
"Today" is read through the BYPASSRLS role: the planner leaves the policies out for it, and the
script checks that its plans equal the plans taken before RLS was enabled. One database rather
than a copy with RLS (tried first): with two copies the configurations that share a copy's pages
ran each search twice on the same pages, the RLS copy once, and caching decided the comparison
(the vector statement came out 5.5 ms faster at median for plain+set than for plain, which differ
by one set_config argument). Here every configuration reads the same pages, so each search can
run in all three back to back, and no DDL happens inside the measurement.

Three configurations; every random (namespace, question, query vector) search runs in all
three back to back, the order rotating from search to search:
  plain      today: the statements as the legs run them (lexical: one autocommit statement;
             vector: a transaction whose set_config sets the HNSW settings, then the search);
  plain+set  the connection pattern RLS needs, same role: the lexical statement in
             a transaction after set_config('recallmesh.namespace', ns, true); the vector leg
             adds the namespace to the set_config it already sends. What the protocol costs;
  rls        that pattern by the role the policies apply to: protocol plus policy.
Statements: the lexical leg's BM25 search (the shipped ranking), its ts_rank search and the
vector leg's nearest-neighbour search, each built by the leg's own build_*_sql with the shipped
settings (k1, b, or_min_rank, ef_search, iterative_scan), k=--k, no filters. Latency is
client-side wall time per search, every round trip included (psycopg, one connection per
role, autocommit like the legs' pools). Every search's result rows are compared between the
configurations. EXPLAIN ANALYZE of one search per statement and configuration shows which
indexes each uses; the leakproof flags of the operators in the statements' quals are listed,
because Postgres runs a non-leakproof user qual only after the policy's and then cannot use it
as an index condition. Wall checks: with RLS and no namespace set, or another namespace set, a
search returns no rows, and a statement without a namespace predicate sees one namespace.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import secrets
import shlex
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg
from psycopg import sql as pgsql

from benchmarks.harness.script import log, machine_info
from benchmarks.harness.stats import percentile
from benchmarks.performance.gateway_recall import DATASETS, read_queries, read_texts
from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.migrations.vector_schema import (
    INDEX_NAME,
    HnswSettings,
    create_hnsw_index,
    prepare_database,
    vector_literal,
)
from recallmesh.services.lexical import core as lexical
from recallmesh.services.lexical.settings import LexicalSettings
from recallmesh.services.vector import core as vector
from recallmesh.services.vector.settings import VectorSettings
from recallmesh.shared.db import embedded_dsn, start_embedded
from recallmesh.wire.filters import Filters

DB = "rls_bench"
# config's connection -> (role, BYPASSRLS)
ROLES = {"today": ("rls_bench_today", True), "rls": ("rls_bench_app", False)}
SETTING = "recallmesh.namespace"
POLICY = "recallmesh_namespace_wall"
CONFIGS = ("plain", "plain+set", "rls")
KINDS = ("lexical bm25", "lexical ts_rank", "vector")
SEED = 24
REPORT = Path("benchmarks/reports/rls-cost.md")
COMMAND = "make bench-rls"

# The operators in the three statements' quals on namespace-keyed tables; a non-leakproof one
# is evaluated after the policy's qual and cannot be an index condition under RLS.
QUAL_OPERATORS = [
    ("@@", "tsvector", "tsquery", "memories.search_vector @@ query (ts_rank statement)"),
    ("=", "text", "text", "namespace = ..., lexeme = ..., embedding_model = ..."),
    ("=", "uuid", "uuid", "memories.id = posting's memory_id (BM25 statement)"),
    (">", "timestamp with time zone", "timestamp with time zone", "expires_at > now()"),
    ("<=>", "halfvec", "halfvec", "embedding <=> query vector (ORDER BY, vector statement)"),
]

# A random unit vector per row, drawn in SQL (random_normal: PostgreSQL 16+; l2_normalize:
# pgvector 0.7+); the reference to t.ord makes it a per-row subplan rather than one value.
_INSERT = """
INSERT INTO memories (namespace, content, created_at, embedding, embedding_model)
SELECT %(ns)s, t.content, now() - make_interval(mins => (%(n)s - t.ord)::int),
       (SELECT l2_normalize(array_agg(random_normal())::vector)::halfvec
        FROM generate_series(1, %(dim)s) WHERE t.ord > 0),
       %(model)s
FROM unnest(%(contents)s::text[]) WITH ORDINALITY AS t(content, ord)
"""


def with_db(dsn: str, dbname: str, **overrides: str) -> str:
    return psycopg.conninfo.make_conninfo(dsn, dbname=dbname, **overrides)


# ------------------------------------------------------------------ the database


def create_database(admin_dsn: str, manifest: ModelManifest, texts: list[str],
                    namespaces: list[str], hnsw: HnswSettings) -> dict[str, Any]:
    """The database, migrated, loaded and analysed (RLS still off); returns load facts."""
    per_ns = len(texts) // len(namespaces)
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            pgsql.Identifier(DB)))
        admin.execute(pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(DB)))
    dsn = with_db(admin_dsn, DB)
    prepare_database(dsn, manifest)
    facts: dict[str, Any] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        # Loaded without the HNSW index, which is built once afterwards (far faster).
        conn.execute(f"DROP INDEX {INDEX_NAME}")
        conn.execute("SELECT setseed(0.24)")
        began = time.perf_counter()
        for i, ns in enumerate(namespaces):
            chunk = texts[i * per_ns : (i + 1) * per_ns]
            with conn.transaction():
                conn.execute(_INSERT, {"ns": ns, "n": len(chunk), "dim": manifest.dimension,
                                       "model": manifest.model_id, "contents": chunk})
            if (i + 1) % 5 == 0 or i + 1 == len(namespaces):
                log(f"loaded {i + 1}/{len(namespaces)} namespaces "
                    f"({(i + 1) * per_ns / (time.perf_counter() - began):.0f} memories/s)")
        facts["load_s"] = time.perf_counter() - began
        # No indexer runs here: the outbox rows the insert trigger wrote are not needed.
        conn.execute("TRUNCATE embedding_jobs")
        began = time.perf_counter()
        conn.execute("SET maintenance_work_mem = '512MB'")
        create_hnsw_index(conn, "embedding", INDEX_NAME, hnsw)
        facts["hnsw_build_s"] = time.perf_counter() - began
        conn.execute("VACUUM ANALYZE")
        facts["rows"] = {t: conn.execute(
            pgsql.SQL("SELECT count(*) FROM {}").format(pgsql.Identifier(t))).fetchone()[0]
            for t in ("memories", "memory_lexemes", "lexeme_stats", "namespace_stats")}
        facts["sizes_mib"] = {name: round(conn.execute(
            "SELECT pg_total_relation_size(%s::regclass)", (name,)).fetchone()[0] / 2**20, 1)
            for name in ("memories", "memory_lexemes", "lexeme_stats", INDEX_NAME)}
        facts["shared_buffers"] = conn.execute("SHOW shared_buffers").fetchone()[0]
        facts["hnsw"] = {"m": hnsw.m, "ef_construction": hnsw.ef_construction}
    return facts


def enable_rls(conn: psycopg.Connection) -> list[str]:
    """ENABLE + FORCE row-level security and the namespace policy on every namespace-keyed table."""
    tables = [r[0] for r in conn.execute(
        "SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid "
        "WHERE c.relkind = 'r' AND c.relnamespace = 'public'::regnamespace "
        "AND a.attname = 'namespace' AND NOT a.attisdropped ORDER BY 1").fetchall()]
    with conn.transaction():
        for table in tables:
            t = pgsql.Identifier(table)
            conn.execute(pgsql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(t))
            conn.execute(pgsql.SQL("ALTER TABLE {} FORCE ROW LEVEL SECURITY").format(t))
            conn.execute(pgsql.SQL(
                "CREATE POLICY {} ON {} USING (namespace = current_setting({}, true))"
            ).format(pgsql.Identifier(POLICY), t, pgsql.Literal(SETTING)))
    return tables


def create_roles(admin_dsn: str) -> dict[str, str]:
    """Two login roles that own nothing, with SELECT on every table: `today` BYPASSRLS (the
    planner leaves the policies out entirely), `rls` not. Their DSNs."""
    dsns = {}
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        for config, (role, bypass) in ROLES.items():
            password = secrets.token_hex(16)
            admin.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(role)))
            admin.execute(pgsql.SQL("CREATE ROLE {} LOGIN NOSUPERUSER {} PASSWORD {}").format(
                pgsql.Identifier(role), pgsql.SQL("BYPASSRLS" if bypass else "NOBYPASSRLS"),
                pgsql.Literal(password)))
            dsns[config] = psycopg.conninfo.make_conninfo(
                with_db(admin_dsn, DB), user=role, password=password)
    with psycopg.connect(with_db(admin_dsn, DB), autocommit=True) as conn:
        for role, _ in ROLES.values():
            conn.execute(pgsql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}").format(
                pgsql.Identifier(role)))
    return dsns


def drop_database(admin_dsn: str) -> None:
    with psycopg.connect(admin_dsn, autocommit=True) as admin:
        admin.execute(pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            pgsql.Identifier(DB)))
        for role, _ in ROLES.values():
            admin.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(role)))


# --------------------------------------------------------------------- the searches


@dataclass(frozen=True)
class Search:
    namespace: str
    query: str
    vector: str  # pgvector literal


def statement(kind: str, search: Search, k: int, model: str) -> tuple[str, dict[str, Any]]:
    """The leg's own statement and parameters, with the shipped settings."""
    lex = LexicalSettings()
    if kind == "lexical bm25":
        sql, params = lexical.build_bm25_sql(Filters(), "relevance")
        params.update(k1=lex.bm25_k1, b=lex.bm25_b)
    elif kind == "lexical ts_rank":
        sql, params = lexical.build_search_sql(Filters(), "relevance")
    else:
        sql, params = vector.build_search_sql(Filters())
        params.update(ns=search.namespace, vector=search.vector, model=model, k=k)
        return sql, params
    params.update(ns=search.namespace, query=search.query, k=k, or_min_rank=lex.or_min_rank)
    return sql, params


def prelude(kind: str, config: str, namespace: str) -> tuple[str, tuple[Any, ...]] | None:
    """The set_config statement sent before the search in its transaction, if any.

    The vector leg already sends one for its HNSW settings (recallmesh/services/vector/core.py);
    with RLS the namespace joins it. The lexical leg sends none today (one autocommit
    statement); with RLS it needs a transaction and one.
    """
    settings = VectorSettings.from_env()
    parts: list[str] = []
    args: list[Any] = []
    if kind == "vector":
        parts += ["set_config('hnsw.ef_search', %s, true)",
                  "set_config('hnsw.iterative_scan', %s, true)"]
        args += [str(settings.ef_search), settings.iterative_scan]
    if config != "plain":
        parts.append(f"set_config('{SETTING}', %s, true)")
        args.append(namespace)
    return ("SELECT " + ", ".join(parts), tuple(args)) if parts else None


def run_search(conn: psycopg.Connection, kind: str, config: str, search: Search, k: int,
               model: str, explain: str = "") -> list[tuple[Any, ...]]:
    sql, params = statement(kind, search, k, model)
    pre = prelude(kind, config, search.namespace)
    if pre is None:  # the lexical leg today: one autocommit statement
        return conn.execute(explain + sql, params).fetchall()
    with conn.transaction():
        conn.execute(*pre)
        return conn.execute(explain + sql, params).fetchall()


def make_searches(namespaces: list[str], queries: list[str], n: int, dim: int,
                  rng: random.Random, np_rng: np.random.Generator) -> list[Search]:
    out = []
    for _ in range(n):
        v = np_rng.standard_normal(dim)
        v /= np.linalg.norm(v)
        out.append(Search(rng.choice(namespaces), rng.choice(queries), vector_literal(v)))
    return out


def ids(rows: list[tuple[Any, ...]]) -> list[str]:
    return [str(r[0]) for r in rows]


def measure(conns: dict[str, psycopg.Connection], searches_per_round: list[list[Search]],
            k: int, model: str) -> tuple[dict[tuple[str, str], list[float]],
                                         dict[tuple[str, str], list[float]], dict[str, Any]]:
    """Latencies per (kind, config) over all rounds (the i-th entry of each config is the same
    search), per-round p95s, and result comparisons. Each search runs in all three
    configurations back to back, the order rotating from search to search and round to round,
    so drift on a shared machine falls on all three alike."""
    lat: dict[tuple[str, str], list[float]] = {(kd, c): [] for kd in KINDS for c in CONFIGS}
    round_p95: dict[tuple[str, str], list[float]] = {key: [] for key in lat}
    checks = {kd: {"compared": 0, "differ": {c: 0 for c in CONFIGS[1:]}, "rows": 0}
              for kd in KINDS}
    for r, searches in enumerate(searches_per_round):
        ms: dict[tuple[str, str], list[float]] = {key: [] for key in lat}
        for i, s in enumerate(searches):
            shift = (r + i) % len(CONFIGS)
            for kind in KINDS:
                got: dict[str, list[str]] = {}
                for config in CONFIGS[shift:] + CONFIGS[:shift]:
                    t0 = time.perf_counter()
                    rows = run_search(conns[config], kind, config, s, k, model)
                    ms[(kind, config)].append((time.perf_counter() - t0) * 1000)
                    got[config] = ids(rows)
                checks[kind]["compared"] += 1
                checks[kind]["rows"] += len(got["plain"])
                for config in CONFIGS[1:]:
                    checks[kind]["differ"][config] += got[config] != got["plain"]
        for key, values in ms.items():
            lat[key].extend(values)
            round_p95[key].append(percentile(values, 95))
        log(f"round {r + 1}/{len(searches_per_round)} done")
    return lat, round_p95, checks


# -------------------------------------------------------------------------- plans


INDEX_RE = re.compile(r"(?:Index Scan|Index Only Scan|Bitmap Index Scan)(?: Backward)? "
                      r"(?:using|on) (\S+)(?: on (\S+))?")


def plans(conns: dict[str, psycopg.Connection], search: Search, k: int,
          model: str) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        out[kind] = {}
        for config in ("plain", "rls"):
            rows = run_search(conns[config], kind, config, search, k, model,
                              explain="EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, "
                                      "BUFFERS OFF) ")
            # The query vector's 768 numbers say nothing about the plan.
            text = re.sub(r"'\[[^\]]{200,}\]'", "'[query vector]'",
                          "\n".join(r[0] for r in rows))
            out[kind][config] = {
                "indexes": sorted({m.group(1) for m in INDEX_RE.finditer(text)}),
                "seq_scans": sorted(set(re.findall(r"Seq Scan on (\S+)", text))),
                # Where the policy's qual landed: folded into a once-per-scan check against the
                # statement's own namespace, or evaluated on every row.
                "policy_one_time_filters": len(re.findall(
                    r"One-Time Filter: .*current_setting", text)),
                "policy_row_filters": len(re.findall(
                    r"(?<!One-Time )Filter: .*current_setting", text)),
                "plan": text,
            }
    return out


def plain_plans(conn: psycopg.Connection, search: Search, k: int, model: str) -> dict[str, str]:
    """EXPLAIN (COSTS OFF) of each statement as the legs run it today."""
    return {kind: "\n".join(r[0] for r in run_search(conn, kind, "plain", search, k, model,
                                                     explain="EXPLAIN (COSTS OFF) "))
            for kind in KINDS}


def leakproof(conn: psycopg.Connection) -> list[dict[str, Any]]:
    out = []
    for op, left, right, where in QUAL_OPERATORS:
        row = conn.execute(
            "SELECT o.oprcode::text, p.proleakproof FROM pg_operator o "
            "JOIN pg_proc p ON p.oid = o.oprcode "
            "WHERE o.oprname = %s AND o.oprleft = %s::regtype AND o.oprright = %s::regtype",
            (op, left, right)).fetchone()
        out.append({"operator": f"{left} {op} {right}", "function": row[0] if row else None,
                    "leakproof": bool(row and row[1]), "used_in": where})
    return out


def wall_checks(conns: dict[str, psycopg.Connection], search: Search, other_ns: str, k: int,
                model: str) -> dict[str, int]:
    """Rows an RLS search returns with no namespace set, and with another namespace set."""
    conn = conns["rls"]
    sql, params = statement("lexical bm25", search, k, model)
    with conn.transaction():
        unset = len(conn.execute(sql, params).fetchall())
    with conn.transaction():
        conn.execute(f"SELECT set_config('{SETTING}', %s, true)", (other_ns,))
        other = len(conn.execute(sql, params).fetchall())
    with conn.transaction():
        conn.execute(f"SELECT set_config('{SETTING}', %s, true)", (search.namespace,))
        own = len(conn.execute(sql, params).fetchall())
        # A statement that forgot its namespace predicate sees the set namespace only.
        visible = conn.execute(
            "SELECT count(DISTINCT namespace), count(*) FROM memories").fetchone()
    return {"no_namespace_set": unset, "other_namespace_set": other, "own_namespace_set": own,
            "unscoped_count_namespaces": visible[0], "unscoped_count_rows": visible[1]}


# ------------------------------------------------------------------------- report


def summarise(lat: dict[tuple[str, str], list[float]],
              round_p95: dict[tuple[str, str], list[float]],
              checks: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for kind in KINDS:
        base = sorted(lat[(kind, "plain")])
        b95 = percentile(base, 95)
        for config in CONFIGS:
            paired = [a - b for a, b in zip(lat[(kind, config)], lat[(kind, "plain")],
                                            strict=True)]
            v = sorted(lat[(kind, config)])
            p95 = percentile(v, 95)
            rows.append({
                "query": kind, "config": config, "n": len(v),
                "p50_ms": percentile(v, 50), "p95_ms": p95, "p99_ms": percentile(v, 99),
                "mean_ms": statistics.fmean(v),
                "added_p50_ms": percentile(v, 50) - percentile(base, 50),
                "added_p95_ms": p95 - b95, "added_p95_pct": (p95 - b95) / b95 * 100,
                "paired_median_added_ms": statistics.median(paired),
                "rounds_p95_ms": [round(x, 2) for x in round_p95[(kind, config)]],
                "results_differ": (0 if config == "plain"
                                   else checks[kind]["differ"][config]),
                "compared": checks[kind]["compared"],
            })
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| query | config | p50 ms | p95 ms | p99 ms | added p50 ms | added p95 ms "
             "| added p95 % | median paired added ms | p95 per round | same rows as plain |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        same = ("—" if r["config"] == "plain" else
                f"{r['compared'] - r['results_differ']}/{r['compared']}")
        added = ("— | — | — | —" if r["config"] == "plain" else
                 f"{r['added_p50_ms']:+.2f} | {r['added_p95_ms']:+.2f} "
                 f"| {r['added_p95_pct']:+.1f}% | {r['paired_median_added_ms']:+.2f}")
        lines.append(f"| {r['query']} | {r['config']} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} "
                     f"| {r['p99_ms']:.2f} | {added} | {r['rounds_p95_ms']} | {same} |")
    return "\n".join(lines)


def meaning(rows: list[dict[str, Any]], plan: dict[str, Any], walls: dict[str, int],
            leak: list[dict[str, Any]]) -> str:
    """Facts only, from this run's numbers."""
    by = {(r["query"], r["config"]): r for r in rows}
    parts = []
    for kind in KINDS:
        s, rl = by[(kind, "plain+set")], by[(kind, "rls")]
        same = plan[kind]["plain"]["indexes"] == plan[kind]["rls"]["indexes"]
        parts.append(
            f"{kind}: RLS (protocol + policy) added {rl['added_p50_ms']:+.2f} ms at p50 and "
            f"{rl['added_p95_ms']:+.2f} ms ({rl['added_p95_pct']:+.1f}%) at p95 (median paired "
            f"difference {rl['paired_median_added_ms']:+.2f} ms); the connection pattern alone "
            f"(plain+set): {s['added_p95_ms']:+.2f} ms at p95, median paired "
            f"{s['paired_median_added_ms']:+.2f} ms; "
            + ("the plan used the same indexes"
               if same else
               f"the plan's indexes changed from {plan[kind]['plain']['indexes']} to "
               f"{plan[kind]['rls']['indexes']}")
            + f"; {rl['compared'] - rl['results_differ']}/{rl['compared']} searches returned "
            "the same rows as today.")
    parts.append("Operators in the statements' quals that are not leakproof: " + ", ".join(
        f"`{x['operator']}` ({x['function']})" for x in leak if not x["leakproof"]) + ".")
    parts.append(
        f"With RLS and no namespace set a search returned {walls['no_namespace_set']} rows, "
        f"with another namespace set {walls['other_namespace_set']} rows (its own: "
        f"{walls['own_namespace_set']}); `SELECT count(*) FROM memories` with no namespace "
        f"predicate saw {walls['unscoped_count_rows']} rows of "
        f"{walls['unscoped_count_namespaces']} namespace(s).")
    return "\n".join(f"- {p}" for p in parts)


def write_report(path: Path, result: dict[str, Any]) -> None:
    s, m, srv, load = result["settings"], result["machine"], result["server"], result["load"]
    leak = "\n".join(f"| `{x['operator']}` | `{x['function']}` | "
                     f"{'yes' if x['leakproof'] else '**no**'} | {x['used_in']} |"
                     for x in result["leakproof"])
    plan_head = ("| statement | indexes, plain | indexes, rls | sequential scans, rls "
                 "| policy qual as one-time filter, rls | policy qual as per-row filter, rls |\n"
                 "|---|---|---|---|---:|---:|")
    plan_rows = "\n".join(
        f"| {kind} | {', '.join(p['plain']['indexes']) or '—'} "
        f"| {', '.join(p['rls']['indexes']) or '—'} "
        f"| {', '.join(p['rls']['seq_scans']) or '—'} "
        f"| {p['rls']['policy_one_time_filters']} | {p['rls']['policy_row_filters']} |"
        for kind, p in result["plans"].items())
    plan_text = "\n\n".join(
        f"<details><summary>{kind}, {config}</summary>\n\n```\n{p[config]['plan']}\n```\n\n"
        "</details>"
        for kind, p in result["plans"].items() for config in ("plain", "rls"))
    same_plans = ", ".join(f"{k} {'yes' if v else '**no**'}"
                           for k, v in result["bypass_plans_same_as_rls_off"].items())
    text = f"""# Row-level security on the namespace: what it costs the legs' reads

Generated by `{result['command']}` (`benchmarks/performance/rls_cost.py`; issue 24, "Trust").
How the run is built is in the script's docstring; in short: one Postgres database with
`ENABLE` + `FORCE ROW LEVEL SECURITY` and the policy
`USING (namespace = current_setting('{SETTING}', true))` on every table with a `namespace`
column ({', '.join(load['rls_tables'])}), read by two non-owner, non-superuser roles with SELECT
grants. `plain` is today: the legs' statements run as the legs run them, by a BYPASSRLS role
(the planner leaves the policies out; its plans were checked equal to the plans before RLS was
enabled: {same_plans}).
`plain+set` is the connection pattern RLS needs (the namespace set with `set_config(..., true)`
inside each search's transaction: a transaction and one more statement for the lexical leg, one
more set_config in the statement the vector leg already sends), same role. `rls` is that pattern
by the role the policies apply to. Client-side wall time per search, round trips included;
{s['rounds']} rounds of {s['queries']} random (namespace, question, query vector) searches, each
run in all three configurations back to back, the order rotating from search to search.

## Settings and machine

- corpus: {s['namespaces']} namespaces x {s['per_namespace']} memories (LoCoMo, then
  LongMemEval turns, cut to {s['max_chars']} characters); a random unit vector per memory of the
  model's dimension ({s['model']}, {s['dimension']}), HNSW m {load['hnsw']['m']},
  ef_construction {load['hnsw']['ef_construction']}, built after the load; VACUUM ANALYZE;
  shared_buffers {load['shared_buffers']}
- rows: {', '.join(f'{k} {v:,}' for k, v in load['rows'].items())}; sizes (MiB, with
  indexes): {', '.join(f'{k} {v}' for k, v in load['sizes_mib'].items())}
- statements: the legs' own (`build_bm25_sql`, `build_search_sql` of the lexical and the
  vector leg), sort relevance, no filters, k={s['k']}, BM25 k1 {s['bm25_k1']} b {s['bm25_b']},
  or_min_rank {s['or_min_rank']}, ef_search {s['ef_search']}, iterative_scan
  {s['iterative_scan']}; psycopg {s['psycopg']} (autocommit, statements prepared after 5 runs,
  as in the legs' pools)
- database: PostgreSQL {srv['postgres']}, pgvector {srv['pgvector']}, {srv['where']}
- machine: {m['platform']}, {m['cpu_count']} CPUs ({m['cpus_usable']} usable), Python
  {m['python']}; other work was running on it (a shared development machine)
- load {load['load_s']:.0f} s, HNSW build {load['hnsw_build_s']:.0f} s, total
  {result['total_s']:.0f} s

## Latency

{table(result['rows'])}

`added` is against `plain` of the same statement; `median paired added` is the median over
searches of (this configuration's time − `plain`'s time for the same search, run back to back).
`same rows as plain` compares the ordered result ids of every search with today's.

## Plans

EXPLAIN ANALYZE of the same search (namespace `{result['plan_search']['namespace']}`, question
"{result['plan_search']['query'][:80]}") by each role; indexes named in the plan:

{plan_head}
{plan_rows}

Leakproof flags of the operators in the statements' quals (a policy's qual runs first; a user
qual with an operator that is not leakproof runs after it and cannot be an index condition):

| operator | function | leakproof | in |
|---|---|---|---|
{leak}

{plan_text}

## What this means

{result['meaning']}
"""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--namespaces", type=int, default=20)
    parser.add_argument("--per-namespace", type=int, default=2000)
    parser.add_argument("--max-chars", type=int, default=500, help="cut each text to this")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--queries", type=int, default=150,
                        help="searches per round (each in every statement and configuration)")
    parser.add_argument("--warmup", type=int, default=30,
                        help="untimed searches per statement and configuration")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--datasets", type=Path, default=DATASETS)
    parser.add_argument("--report", type=Path, default=REPORT)
    parser.add_argument("--json", type=Path, default=REPORT.with_suffix(".json"))
    args = parser.parse_args()
    if min(args.namespaces, args.per_namespace, args.rounds, args.queries, args.k) < 1:
        parser.error("--namespaces, --per-namespace, --rounds, --queries and --k must be >= 1")

    began = time.perf_counter()
    manifest = ModelManifest.load()
    texts = read_texts(args.datasets, args.namespaces * args.per_namespace, args.max_chars)
    questions = read_queries(args.datasets, 10_000)
    namespaces = [f"tenant-{i:02d}" for i in range(args.namespaces)]

    server = None
    tmp = None
    admin_dsn = os.environ.get("RECALLMESH_DSN", "").strip()
    where = "the server RECALLMESH_DSN points at"
    if not admin_dsn:
        tmp = tempfile.TemporaryDirectory(prefix="recallmesh-rls-bench-")
        log("starting a throwaway embedded Postgres")
        server = start_embedded(Path(tmp.name) / "pg", cleanup_mode="delete")
        admin_dsn = embedded_dsn(server)
        where = "embedded (throwaway), default settings"
    conns: dict[str, psycopg.Connection] = {}
    try:
        log(f"creating and loading {DB} ({len(texts)} memories)")
        load = create_database(admin_dsn, manifest, texts, namespaces, HnswSettings.from_env())
        dsns = create_roles(admin_dsn)
        today = psycopg.connect(dsns["today"], autocommit=True)
        conns = {"plain": today, "plain+set": today,
                 "rls": psycopg.connect(dsns["rls"], autocommit=True)}
        srv = {"postgres": today.execute("SHOW server_version").fetchone()[0],
               "pgvector": today.execute(
                   "SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0],
               "where": where}
        rng = random.Random(SEED)
        np_rng = np.random.default_rng(SEED)

        def batch(n: int) -> list[Search]:
            return make_searches(namespaces, questions, n, manifest.dimension, rng, np_rng)

        plan_search = batch(1)[0]
        # Today's plans with RLS really off (read by the role the policies will apply to) ...
        rls_off = plain_plans(conns["rls"], plan_search, args.k, manifest.model_id)
        with psycopg.connect(with_db(admin_dsn, DB), autocommit=True) as owner:
            load["rls_tables"] = enable_rls(owner)
        # ... against the BYPASSRLS role's plans once the policies are in place.
        bypass = plain_plans(today, plan_search, args.k, manifest.model_id)
        bypass_same = {kind: rls_off[kind] == bypass[kind] for kind in KINDS}
        if not all(bypass_same.values()):
            log(f"warning: the BYPASSRLS role's plans differ from RLS-off plans: {bypass_same}")

        log("warm-up")
        warm = batch(args.warmup)
        for config in CONFIGS:
            for kind in KINDS:
                for s in warm:
                    run_search(conns[config], kind, config, s, args.k, manifest.model_id)
        rounds = [batch(args.queries) for _ in range(args.rounds)]
        lat, round_p95, checks = measure(conns, rounds, args.k, manifest.model_id)
        plan = plans(conns, plan_search, args.k, manifest.model_id)
        leak = leakproof(today)
        other = next(ns for ns in namespaces if ns != plan_search.namespace) \
            if len(namespaces) > 1 else "no-such-namespace"
        walls = wall_checks(conns, plan_search, other, args.k, manifest.model_id)
    finally:
        for c in set(conns.values()):
            c.close()
        if server is None:
            drop_database(admin_dsn)
        else:
            server.cleanup()
            tmp.cleanup()

    rows = summarise(lat, round_p95, checks)
    vs, lex = VectorSettings.from_env(), LexicalSettings()
    result = {
        "benchmark": "rls_cost",
        "command": COMMAND,
        "argv": " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "machine": machine_info(),
        "server": srv,
        "settings": {"namespaces": args.namespaces, "per_namespace": args.per_namespace,
                     "max_chars": args.max_chars, "rounds": args.rounds,
                     "queries": args.queries, "warmup": args.warmup, "k": args.k,
                     "model": manifest.model_id, "dimension": manifest.dimension,
                     "bm25_k1": lex.bm25_k1, "bm25_b": lex.bm25_b,
                     "or_min_rank": lex.or_min_rank, "ef_search": vs.ef_search,
                     "iterative_scan": vs.iterative_scan, "psycopg": psycopg.__version__,
                     "seed": SEED},
        "load": load,
        "rows": rows,
        "checks": checks,
        "walls": walls,
        "leakproof": leak,
        "plan_search": {"namespace": plan_search.namespace, "query": plan_search.query},
        "plans": plan,
        "bypass_plans_same_as_rls_off": bypass_same,
        "latencies_ms": {f"{kd} | {c}": [round(x, 3) for x in v] for (kd, c), v in lat.items()},
        "total_s": time.perf_counter() - began,
    }
    result["meaning"] = meaning(rows, plan, walls, leak)
    print(table(rows))
    print()
    for kind, p in plan.items():
        print(f"{kind}: indexes plain {p['plain']['indexes']}, rls {p['rls']['indexes']}")
    print(f"walls: {walls}")
    print(f"\n{result['meaning']}")
    write_report(args.report, result)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    log(f"wrote {args.report} and {args.json} ({result['total_s']:.0f} s)")


if __name__ == "__main__":
    main()
