"""The lexical sweep on the tiny fixture: BM25 from the postings (migrations/0006) ranks
exactly like the former scoring that unnested every matching vector, and every variant runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.lexical_sweep import VARIANTS, markdown, sweep
from recallmesh.platform.migrations import apply_migrations

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).parents[1] / "fixtures" / "bench_tiny"


def test_postings_rank_like_unnesting_and_every_variant_runs(scratch_dsn):
    apply_migrations(scratch_dsn)
    result = sweep(FIXTURE, scratch_dsn)
    assert result["postings_equal_unnest_top10"] == [4, 4]
    scores = {v["variant"]: v["recall@10"] for v in result["variants"]}
    assert list(scores) == [v[0] for v in VARIANTS]
    assert scores["bm25 k1=0.9 b=0.4 (default)"] == scores[
        "bm25 k1=0.9 b=0.4, unnesting vectors (before 0006)"]
    assert "identical top 10 for 4 of 4 queries" in markdown([result])
    assert result["default_before_analyze"]["same_top10"] == 4  # statistics change no ranking
