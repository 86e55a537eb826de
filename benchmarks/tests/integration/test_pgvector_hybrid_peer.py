"""peer_pgvector_hybrid against a real Postgres with pgvector: hand-made docs and 3-dimensional
vectors, each scope in a table of its own, ranked by the one hybrid statement."""

from __future__ import annotations

import dataclasses

import numpy as np
import psycopg
import pytest

from benchmarks.harness.peers import PEERS, Doc

pytestmark = pytest.mark.integration


def unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


QUERY, QUERY_VECTOR = "zebra carrots", unit(1, 0, 0)
SCOPE_A = [
    Doc("a:kw", "Zebra carrots, zebra carrots and more zebra carrots", unit(0, 0, 1)),
    Doc("a:both", "The zebra ate the carrots", unit(1, 0, 0)),
    Doc("a:vec", "Striped horses graze on the savanna", unit(0.9, 0.1, 0)),
    Doc("a:none", "Lunch is at noon", unit(0, 1, 0)),
]
SCOPE_B = [  # what would win scope A's query if scopes leaked
    Doc("b:both", "zebra carrots", unit(1, 0, 0)),
    Doc("b:other", "Saturn has rings", unit(0, 1, 0)),
]


@pytest.mark.integration
def test_keyword_and_vector_sides_fused_per_scope(dsn, tmp_path):
    peer = PEERS["peer_pgvector_hybrid"]
    schema = peer.settings_["schema"]
    # Two per side, so that the vector side cannot simply return every doc of the scope.
    shallow = dataclasses.replace(peer, settings_=peer.settings_ | {"depth": 2})
    with shallow.builder(str(tmp_path), dsn) as builder:
        a, b = builder.build(SCOPE_A), builder.build(SCOPE_B)
        # Keyword side: a:kw 1, a:both 2 (both hold every term); vector side: a:both 1,
        # a:vec 2 (a:kw and a:none are orthogonal to the query: rank 3, past the depth).
        # a:both 1/61 + 1/62 > a:kw 1/61 > a:vec 1/62; a:none is on neither side.
        assert a.search(QUERY, QUERY_VECTOR, 10) == ["a:both", "a:kw", "a:vec"]
        assert a.search(QUERY, QUERY_VECTOR, 1) == ["a:both"]
        assert b.search(QUERY, QUERY_VECTOR, 10) == ["b:both", "b:other"]
        # No term matches: the vector side alone.
        assert a.search("Saturn", unit(0, 1, 0), 10) == ["a:none", "a:vec"]
        assert builder.info["pgvector"] and builder.info["hnsw.ef_search"] == "40"
        with psycopg.connect(dsn) as conn:
            indexes = [d for (d,) in conn.execute(
                "SELECT indexdef FROM pg_indexes WHERE schemaname = %s AND tablename = "
                "'scope_0' ORDER BY indexdef", (schema,))]
            assert len(indexes) == 3  # primary key, GIN, HNSW
            assert any("USING gin (tsv)" in d for d in indexes)
            assert any("USING hnsw (embedding vector_cosine_ops) WITH (m='16', "
                       "ef_construction='64')" in d for d in indexes)
    with peer.builder(str(tmp_path), dsn) as builder:  # as run: 20 per side
        a = builder.build(SCOPE_A)
        ranked = a.search(QUERY, QUERY_VECTOR, 10)
        assert ranked[0] == "a:both" and sorted(ranked) == sorted(d.corpus_id for d in SCOPE_A)
    with psycopg.connect(dsn) as conn:  # nothing left behind
        assert conn.execute("SELECT to_regnamespace(%s)", (schema,)).fetchone()[0] is None
