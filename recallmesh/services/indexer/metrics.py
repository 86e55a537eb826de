"""The indexer's metrics: its jobs by outcome, its batches' time, the jobs waiting and parked,
and the claim size (recallmesh/services/indexer/sizing.py sets it)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

JOBS = Counter(
    "recallmesh_indexer_jobs_total",
    "Embedding jobs finished, by outcome (indexed, superseded, dropped, failed, parked).",
    ["outcome"],
)
JOB_OUTCOMES = ("indexed", "superseded", "dropped", "failed", "parked")
BATCH_SECONDS = Histogram(
    "recallmesh_indexer_batch_seconds",
    "Claim + embed + write time of one indexer batch.",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
PENDING = Gauge("recallmesh_indexer_pending_jobs",
                "Embedding jobs waiting, parked ones not included (all namespaces).")
PARKED = Gauge("recallmesh_indexer_parked_jobs",
               "Embedding jobs parked after max_attempts failures of their own text (all "
               "namespaces): their memories are found lexically only until `recallmesh jobs "
               "retry` or `drop`.")
CLAIM_SIZE = Gauge("recallmesh_indexer_claim_size",
                   "Jobs the indexer claims per batch now: the batch size, halved after each "
                   "batch that ran out of time and doubled back after each in time, up to 3/4 "
                   "of the last claim that ran out of time (for probe_after batches).")


def export_job_zeros() -> None:
    """recallmesh_indexer_jobs_total at zero for every outcome, from the start: the alert
    RecallmeshEmbeddingBacklogStuck and the dashboard read its increase, and a labelled counter
    is otherwise exported only from its first increment (which rate() cannot see)."""
    for outcome in JOB_OUTCOMES:
        JOBS.labels(outcome)
