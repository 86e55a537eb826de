"""Unit: peer_pgvector_hybrid's single SQL statement and its registration (the statement run
against a real Postgres: benchmarks/tests/integration/test_pgvector_hybrid_peer.py)."""

from __future__ import annotations

import pytest
from psycopg import sql

from benchmarks.harness.configs import DEFAULT_CONFIGS, PEER_CONFIGS
from benchmarks.harness.peers import PEERS, hybrid_sql

TABLE = sql.Identifier("peer_pgvector_hybrid", "scope_0")


def test_one_statement_two_sides_of_depth_fused_by_reciprocal_rank():
    text = hybrid_sql(TABLE).as_string(None)
    assert text.count("WITH ") == 1 and ";" not in text
    # Full text: ts_rank_cd over plainto_tsquery('english'), the best `depth` matches.
    assert "ts_rank_cd(tsv, q) AS score" in text
    assert "plainto_tsquery('english', %(query)s) AS q" in text and "WHERE tsv @@ q" in text
    # Vectors: ordered by cosine distance to the query as such (what the HNSW index serves).
    assert "ORDER BY embedding <=> %(embedding)s\n" in text
    assert text.count("LIMIT %(depth)s") == 2
    # Both sides ranked 1.. and fused: sum of 1 / (rrf_k + rank) over the sides that found it.
    assert text.count("RANK() OVER") == 2
    assert "FULL OUTER JOIN keyword AS w ON s.id = w.id" in text
    assert ("COALESCE(1.0 / (%(rrf_k)s + s.rank), 0.0)\n"
            "         + COALESCE(1.0 / (%(rrf_k)s + w.rank), 0.0) AS score") in text
    assert text.endswith("ORDER BY score DESC, COALESCE(s.id, w.id)\nLIMIT %(k)s")
    assert text.count('"peer_pgvector_hybrid"."scope_0"') == 2


def test_the_query_is_only_bound_and_only_known_functions_are_named():
    other = hybrid_sql(TABLE, "websearch_to_tsquery", "ts_rank").as_string(None)
    assert "websearch_to_tsquery('english', %(query)s)" in other and "ts_rank(tsv, q)" in other
    for bad in (("plainto_tsquery('simple', 'x'); DROP TABLE memories; --", "ts_rank_cd"),
                ("plainto_tsquery", "ts_rank_cd(tsv, q) + 1 --")):
        with pytest.raises(ValueError, match="tsquery must be one of"):
            hybrid_sql(TABLE, *bad)


def test_registered_and_run_by_default_with_its_settings_recorded():
    assert "peer_pgvector_hybrid" in PEER_CONFIGS and "peer_pgvector_hybrid" in DEFAULT_CONFIGS
    peer = PEERS["peer_pgvector_hybrid"]
    settings = peer.settings()
    assert settings["peer"] and settings["needs_vectors"] and settings["library"] == "pgvector"
    assert settings["settings_"] == {
        "schema": "peer_pgvector_hybrid", "depth": 20, "rrf_k": 60,
        "tsquery": "plainto_tsquery", "text_rank": "ts_rank_cd", "m": 16,
        "ef_construction": 64}


def test_it_needs_a_database():
    peer = PEERS["peer_pgvector_hybrid"]
    with pytest.raises(ValueError, match="needs the stack's Postgres"), \
            peer.builder("/nonexistent"):
        pass
    with pytest.raises(ValueError, match="built through Peer.builder"):
        peer.build([], "/nonexistent")
