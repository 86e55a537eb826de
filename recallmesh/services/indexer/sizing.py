"""How many jobs the indexer claims per batch.

A batch that ran out of time (a slow model on a busy CPU, long texts) halves the number of
jobs claimed next (down to one), so the indexer cannot be stuck retrying a batch it can never
finish in time; each batch done in time doubles it again, up to batch_size, but only up to
3/4 of the last claim that ran out of time until probe_after batches were in time. Other
failures (an outage, a refusal) leave the claim as it is.
"""

from __future__ import annotations

from recallmesh.services.indexer.metrics import CLAIM_SIZE
from recallmesh.services.indexer.poison import timed_out


class ClaimSizer:
    def __init__(self, batch_size: int, probe_after: int = 50) -> None:
        self.batch_size = batch_size
        self.claim_size = batch_size  # halved after a timeout, grows back after successes
        self.last_claim = batch_size  # what the last batch asked for
        # The last claim that ran out of time: the claim grows back only to 3/4 of it, so a
        # size that cannot finish in time is not tried again batch after batch (doubling back
        # to it made every other batch fail and threw its work away). After `probe_after`
        # batches in time it is forgotten, and the claim may grow to the batch size again.
        self.too_big: int | None = None
        self.probe_after = probe_after
        self.in_time = 0  # batches done in time since the last timeout
        CLAIM_SIZE.set(batch_size)

    def next_claim(self) -> int:
        """How many jobs the batch starting now asks for (remembered as last_claim)."""
        self.last_claim = self.claim_size
        return self.claim_size

    def done(self, asked: int, error: BaseException | None) -> None:
        """A batch that ran out of time halves the next claim; one in time doubles it back,
        up to 3/4 of the last claim that ran out of time (forgotten after probe_after batches
        in time) or the batch size."""
        if error is not None:
            if timed_out(error):
                self.too_big, self.in_time = asked, 0
                if self.claim_size > 1:
                    self.claim_size = max(1, self.claim_size // 2)
                    CLAIM_SIZE.set(self.claim_size)
            return
        self.in_time += 1
        if self.too_big is not None and self.in_time >= self.probe_after:
            self.too_big = None
        cap = self.batch_size if self.too_big is None else max(1, self.too_big * 3 // 4)
        grown = min(cap, self.claim_size * 2)
        if grown > self.claim_size:
            self.claim_size = grown
            CLAIM_SIZE.set(self.claim_size)
