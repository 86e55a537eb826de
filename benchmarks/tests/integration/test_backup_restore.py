"""Backups that restore (issue 44), the quick version of `python -m benchmarks restore`
(benchmarks/performance/restore.py): a base backup (pg_basebackup) and continuous WAL
archiving taken under a store load through the real stack, restored into fresh instances.
The full restore has every table of the schema identical to the primary (md5 per table) and
the services serve recall from it with the original's admin key; the point-in-time restore
(recovery_target_time at a moment mid-load) has every store acknowledged before that moment
and none started after it.

The small model (all-MiniLM-L6-v2) keeps the indexer's embedding off the machine's two cores;
the model does not matter to what is checked."""

from __future__ import annotations

import pytest

from benchmarks.performance.restore import Config, run
from tests.models import suite_manifest_env

# 42 s on the 2-core dev machine lightly loaded, 150 s when it was busy (the stack starts twice)
pytestmark = [pytest.mark.integration, pytest.mark.timeout(400)]


def test_a_backup_taken_under_load_restores_whole_and_to_a_point_in_time() -> None:
    config = Config(prefill=200, writers=2, load_before_backup_s=1.5,
                    target_after_backup_s=1.5, load_after_target_s=1.5, targets=("time",),
                    services=("embedding", "lexical", "vector", "indexer", "gateway"),
                    env=(("RECALLMESH_FUSION_TARGET", "local"),
                         *suite_manifest_env("all-MiniLM-L6-v2").items()))
    r = run(config)

    assert r.acked_total > 20 and r.backup_verified
    # the full restore: every table identical, those that matter not empty
    assert r.different == [], {t: (r.primary_sums.get(t), r.restored_sums.get(t))
                               for t in r.different}
    for table in ("memories", "api_keys", "memory_versions", "memory_edges", "memory_lexemes",
                  "namespace_stats", "lexeme_stats"):
        assert r.primary_sums[table][0] > 0, table
    assert r.primary_sums["memories"][0] >= config.prefill + r.acked_total
    assert r.vectors == r.primary_sums["memories"][0]  # every vector is in the comparison
    # the services serve from it, with the key the original stack made
    assert r.stack_recall_hits == 1 and not r.stack_recall_degraded
    assert r.stack_key_reused
    # the BM25 index is not on replicated clusters (decision 0018): both keep the SQL BM25
    assert r.restored_bm25_engine == r.bm25_engine

    # point in time: acknowledged before the target there, stored after it not
    (pitr,) = r.pitr
    assert pitr["acked_before"] > 0 and pitr["acked_after"] > 0, pitr
    assert pitr["before_missing"] == 0 and pitr["after_present"] == 0, pitr
