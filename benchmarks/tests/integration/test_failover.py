"""Failover with zero acknowledged writes lost (issue 44), the quick version of
`python -m benchmarks failover` (benchmarks/performance/failover.py): a real primary and a
real streaming replica with synchronous replication, every service of the stack on the
multi-host DSN (target_session_attrs=read-write), store and recall clients running; the
primary SIGKILLed, the replica promoted a second later, the load going on. Every acknowledged
Store is on the promoted node and Get finds it through the gateway; the callers saw
UNAVAILABLE (never INTERNAL) and only around the switch; every service reconnected by itself
(none restarted) and is SERVING again; the indexer indexes on the new primary.

The small model (all-MiniLM-L6-v2) keeps the embedding of the load's writes from taking the
machine's two cores; the model does not matter to what is checked."""

from __future__ import annotations

import pytest

from benchmarks.performance.failover import Config, run_trial, summary
from tests.models import suite_manifest_env

pytestmark = pytest.mark.integration

RECOVERY_S = 8.0  # after the promotion: stores acknowledged, services SERVING


def test_sync_failover_loses_no_acknowledged_store() -> None:
    config = Config(synchronous=True, writers=2, retrying_writers=1, readers=1, before_s=2.0,
                    promote_after_s=1.0, after_s=5.0, index_timeout_s=90.0,
                    services=("embedding", "lexical", "vector", "indexer", "gateway"),
                    env=(("RECALLMESH_FUSION_TARGET", "local"),
                         *suite_manifest_env("all-MiniLM-L6-v2").items()))
    trial = run_trial(config)
    s = summary(trial)

    assert trial.replication_before == [("replica", "streaming", "quorum")]
    assert s["acked"] > 50, s  # the load ran
    assert trial.missing_sql == [], f"acknowledged stores lost: {trial.missing_sql[:5]}"
    assert trial.missing_get == [], f"Get does not find: {trial.missing_get[:5]}"

    # The load reached into the outage: stores started between the kill and the promotion,
    # and each either failed (below) or was acknowledged by the promoted node, never before
    # there was one. A failover no caller noticed (a retry outlasting the promotion) is fine.
    # Signalling every process of the primary takes a moment on a busy machine: a store that
    # started before the last SIGKILL went out may have been served, by a backend not yet
    # killed, and replicated synchronously; one that started after it must not have been.
    during = [c for c in trial.calls
              if c.kind.startswith("store") and trial.kill_called <= c.start < trial.promoted_at]
    assert during, "no store was made while the primary was down"
    early = [c for c in during
             if c.code == "OK" and c.start >= trial.killed_at and c.end < trial.promote_started]
    assert early == [], f"acknowledged while no primary was up: {early[:3]}"
    failed = trial.failures()
    assert {c.code for c in failed} <= {"UNAVAILABLE", "RESOURCE_EXHAUSTED"}, sorted(
        {(c.kind, c.code, c.details) for c in failed})
    assert all(c.end >= trial.kill_called for c in failed)  # nothing failed before the kill
    # and nothing failed once the promoted node had been serving for a while
    assert all(c.start < trial.promoted_at + RECOVERY_S for c in failed)

    # writes and reads came back soon after the promotion, without restarting anything
    for kind in ("store", "recall"):
        back = s["kinds"][kind]["back"]
        assert back is not None and back - s["promoted_at"] < RECOVERY_S, (kind, s)
    assert trial.restarted == []
    for name, again in s["serving_again"].items():
        assert again is None or again - s["promoted_at"] < RECOVERY_S, (name, again)

    # the indexer writes on the new primary: a Store after the switch is indexed and recalled,
    # and every acknowledged memory gets its vector
    assert trial.probe_indexed and trial.probe_recalled
    assert trial.all_indexed_s is not None
