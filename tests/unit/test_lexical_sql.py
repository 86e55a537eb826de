"""Unit: construction of the lexical leg's single SQL statement."""

from __future__ import annotations

import pytest

from recallmesh.services.lexical.ts_rank import BLEND, build_search_sql
from recallmesh.wire.filters import Filters


def test_relevance_and_importance_blends() -> None:
    assert BLEND["relevance"] == (0.7, 0.3)
    assert BLEND["importance"] == (0.4, 0.6)
    sql, _ = build_search_sql(Filters(), "relevance")
    assert "(rank * 0.7 + importance * 0.3) DESC, id" in sql
    sql, _ = build_search_sql(Filters(), "importance")
    assert "(rank * 0.4 + importance * 0.6) DESC, id" in sql


def test_recency_orders_by_created_at() -> None:
    sql, _ = build_search_sql(Filters(), "recency")
    assert "ORDER BY tier, created_at DESC, id" in sql


def test_user_text_is_only_a_bound_parameter() -> None:
    evil = "x'); DROP TABLE memories; --"
    sql, params = build_search_sql(Filters(categories=(evil,)), "relevance")
    assert "DROP TABLE" not in sql
    assert "plainto_tsquery('english', %(query)s)" in sql
    assert params == {"f_categories": [evil]}


def test_broaden_step_is_gated_and_excludes_and_hits() -> None:
    sql, _ = build_search_sql(Filters(), "relevance")
    assert "(SELECT count(*) FROM and_top) < %(k)s" in sql
    assert "NOT (m.search_vector @@ qq.and_q)" in sql
    assert "rank >= %(or_min_rank)s" in sql
    assert "ORDER BY tier," in sql  # AND hits before OR hits


def test_filters_apply_to_both_tiers() -> None:
    sql, params = build_search_sql(Filters(tags=("a",)), "relevance")
    assert sql.count("m.tags && %(f_tags)s::text[]") == 2
    assert sql.count("m.deleted_at IS NULL") == 2
    assert sql.count("(m.expires_at IS NULL OR m.expires_at > now())") == 2
    assert sql.count("m.namespace = %(ns)s") == 2


def test_unknown_sort_mode_is_a_programming_error() -> None:
    with pytest.raises(ValueError):
        build_search_sql(Filters(), "random")  # type: ignore[arg-type]  # what it refuses


def test_bm25_prunes_unless_every_match_is_needed() -> None:
    """Issue 44: relevance and importance run the pruned BM25 statement (the commonest terms'
    postings read only for candidates); recency, which keeps the newest matches whatever their
    score, and prune=False read every posting of every term."""
    from recallmesh.services.lexical.bm25 import build_bm25_sql
    from recallmesh.services.lexical.scoring import CONTRIBUTION

    for sort_by in ("relevance", "importance"):
        sql, params = build_bm25_sql(Filters(), sort_by)
        assert "candidates_of_partial" in sql and "bound_upto" in sql
        assert "seed_postings" in params
        full, full_params = build_bm25_sql(Filters(), sort_by, prune=False)
        assert "seed" not in full and "seed_postings" not in full_params
        # both sum the same rounded contributions (the same scores to the last bit)
        assert CONTRIBUTION in sql and CONTRIBUTION in full
    recency, params = build_bm25_sql(Filters(tags=("a",)), "recency")
    assert "seed" not in recency and "seed_postings" not in params
