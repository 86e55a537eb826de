"""The context sweep's replay: the neighbours a pool records are the gateway's own store's
(real Postgres), and a replayed pool is ranked by the gateway's own fusion and context code."""

from __future__ import annotations

import json

import psycopg

from benchmarks.replay.context_sweep import BASELINE, replay, sweep
from benchmarks.replay.pool import stored_adjacency
from recallmesh.migrations.vector_schema import prepare_database
from tests.fixtures import scratch_database


def test_adjacency_is_the_gateways_rule(admin_dsn):
    """Neighbours along a thread only, in (created_at, id) order, however far apart in time;
    memories without a thread, or of another thread or namespace, are never neighbours."""
    rows = [("a", "t1", "s1", 0.0), ("a", "t2", "s1", 1.0),
            ("a", "x1", "", 1.5),  # no thread, stored between them: nobody's neighbour
            ("a", "o1", "s2", 1.2),  # another thread, also between them
            ("a", "t3", "s1", 100000.0),  # a day later, still the thread's next turn
            ("a", "n1", "", 2.0), ("a", "n2", "", 3.0),  # close in time, no thread
            ("b", "u1", "s1", 1.5)]  # another namespace, same thread name
    with scratch_database(admin_dsn) as dsn:
        prepare_database(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            for ns, corpus_id, thread, t in rows:
                conn.execute(
                    "INSERT INTO memories (namespace, content, metadata, thread, created_at) "
                    "VALUES (%s, 'x', jsonb_build_object('corpus_id', %s::text), %s, "
                    "to_timestamp(1700000000 + %s))", (ns, corpus_id, thread, t))
        after, before = stored_adjacency(dsn, ["a", "b"])
    assert after == {"t1": "t2", "t2": "t3"}
    assert before == {"t2": "t1", "t3": "t2"}


def pool() -> dict:
    # lexical ranks q1, q2; vector ranks q3, q1; q2's reply r2 was found by no leg
    return {"dataset": "tiny", "git_commit": "x", "next": {"q2": "r2"}, "prev": {"r2": "q2"},
            "sessions": {}, "queries": [{
                "query_id": "1", "category": "c", "cluster": "", "relevant_ids": ["r2"],
                "relevant_sessions": [], "served_top": ["q1", "q2", "q3"],
                "legs": {"lexical": [["q1", 1, 9.0], ["q2", 2, 8.0]],
                         "vector": [["q3", 1, 0.9], ["q1", 2, 0.5]]}}]}


def test_replay_fuses_then_propagates_context():
    p = pool()
    query = p["queries"][0]
    assert replay(p, query, BASELINE) == ["q1", "q3", "q2"]  # cc: q1 1+0, q3 0+1, q2 0+0
    # hit 3 (q2, fused 0) gives nothing; with n=3 the reply r2 still gains 0
    assert replay(p, query, (50, 1.0, 3, 0.5, 0.0)) == ["q1", "q3", "q2"]
    # lexical weight 2: q2 fuses to 0, q1 to 2; q1 has no neighbour: unchanged order
    assert replay(p, query, (50, 2.0, 3, 0.5, 0.0))[0] == "q1"
    query["legs"]["lexical"].append(["q4", 3, 7.0])  # q2 now above the floor
    with_reply = replay(p, query, (50, 1.0, 3, 0.5, 0.0))
    assert "r2" in with_reply and with_reply.index("r2") > with_reply.index("q2")
    assert replay(p, query, (1, 1.0, 0, 0.0, 0.0)) == ["q1", "q3"]  # depth 1: top of each leg


def test_sweep_writes_every_setting_and_the_replay_check(tmp_path):
    path = tmp_path / "pool.json"
    path.write_text(json.dumps(pool()))
    report_to, json_to = tmp_path / "report.md", tmp_path / "report.json"
    detail_to = tmp_path / "detail.json"
    sweep([path], json_to, report_to, detail_to)
    report = json.loads(json_to.read_text())
    # the committed summary holds the rows the report shows; the detail every setting
    shown = report["datasets"]["tiny"]["settings"]
    assert "d50 lex1 no context" in shown and len(shown) <= 12
    settings = json.loads(detail_to.read_text())["datasets"]["tiny"]["settings"]
    assert "d50 lex1 no context" in settings and len(settings) > 100
    assert report["datasets"]["tiny"]["baseline_replay_equals_served_top10"] == 0  # q1 q3 q2
    text = report_to.read_text()
    assert "(baseline)" in text and "(default)" in text
    # one query, few candidates: most settings rank it the same way and share one row
    assert "settings ranking identically" in text
    assert len([line for line in text.splitlines() if line.startswith("| `")]) <= 12
    overall = settings["d50 lex1 no context"]["overall"]
    assert all(round(v, 4) == v for v in overall.values())


def test_dump_against_a_running_stack_then_again_without_loading(stack, tmp_path):
    """`dump --target`: loads the fixture through the gateway, asks every pool with the largest
    budget (never a degraded answer), and a second dump of the same load (`--skip-ingest`)
    gives the same pools; neighbours come from this load's namespaces only."""
    from benchmarks.harness.data import load
    from benchmarks.replay.pool import dump
    from benchmarks.tests.unit.test_benchmark_harness import FIXTURE

    first, second = tmp_path / "first.json", tmp_path / "second.json"
    dump(FIXTURE, first, None, stack.endpoints["gateway"], stack.dsn, namespace_tag="dump1",
         api_key=stack.api_key)
    dump(FIXTURE, second, None, stack.endpoints["gateway"], stack.dsn, skip_ingest=True,
         namespace_tag="dump1", api_key=stack.api_key)
    a, b = json.loads(first.read_text()), json.loads(second.read_text())
    assert a["ingest"]["memories"] > 0 and b["ingest"] == {"skipped": True}
    assert a["queries"] == b["queries"] and a["next"] == b["next"]
    ds = load(FIXTURE)
    assert len(a["queries"]) == len(ds.queries)
    ids = {m.corpus_id for ms in ds.scopes.values() for m in ms}
    assert a["next"] and set(a["next"]) | set(a["next"].values()) <= ids
    for q in a["queries"]:
        assert q["legs"]["lexical"] or q["legs"]["vector"]
        assert len(q["served_top"]) <= 10
