"""The indexer core against a real database, with a scripted embedding function.

The database is a scratch one of its own: the session stack's real indexer
must not race these tests for their jobs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import psycopg
import pytest
from prometheus_client import REGISTRY
from psycopg_pool import AsyncConnectionPool

from recallmesh.embedding_models.manifest import ModelManifest
from recallmesh.migrations.vector_schema import prepare_database
from recallmesh.services.embedding.client import Embeddings
from recallmesh.services.indexer.core import Indexer
from recallmesh.services.indexer.loop import _SharedWait, run_forever
from tests.fixtures import scratch_database
from tests.helpers import one_row

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def own_dsn(admin_dsn: str) -> Iterator[str]:
    with scratch_database(admin_dsn) as url:
        prepare_database(url)
        yield url


@pytest.fixture
def db(own_dsn: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(own_dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
async def pool(own_dsn: str) -> AsyncIterator[AsyncConnectionPool]:
    async with AsyncConnectionPool(own_dsn, min_size=1, max_size=2, open=False,
                                   kwargs={"autocommit": True}) as p:
        yield p


def insert(db: psycopg.Connection, ns: str, content: str, sensitive: bool = False) -> str:
    memory_id: str = one_row(db.execute(
        "INSERT INTO memories (namespace, content, is_sensitive) VALUES (%s, %s, %s) "
        "RETURNING id::text", (ns, content, sensitive)))[0]
    return memory_id


LIVE = ModelManifest.load()  # the model and width prepare_database records
LIVE_MODEL = LIVE.model_id


def unit_vector(i: int) -> list[float]:
    v = [0.0] * LIVE.dimension
    v[i % LIVE.dimension] = 1.0
    return v


class ScriptedEmbedder:
    def __init__(self, during: Callable[[], object] | None = None, fail: Exception | None = None,
                 model: str = LIVE_MODEL) -> None:
        self.seen: list[str] = []
        self.during = during
        self.fail = fail
        self.model = model

    async def __call__(self, texts: list[str]) -> Embeddings:
        self.seen.extend(texts)
        if self.during:
            self.during()
        if self.fail:
            raise self.fail
        return Embeddings(self.model, LIVE.dimension, [unit_vector(len(t)) for t in texts])


def state(db: psycopg.Connection, memory_id: str) -> tuple[Any, ...]:
    return one_row(db.execute(
        "SELECT m.embedding IS NOT NULL, m.embedding_model, j.attempts, j.last_error "
        "FROM memories m LEFT JOIN embedding_jobs j ON j.memory_id = m.id WHERE m.id = %s",
        (memory_id,)))


async def drain(indexer: Indexer, namespace_ids: list[str], db: psycopg.Connection) -> None:
    # Other tests' jobs may be due too; run until ours are processed.
    for _ in range(50):
        await indexer.run_once()
        left = one_row(db.execute(
            "SELECT count(*) FROM embedding_jobs WHERE memory_id = ANY(%s::uuid[]) "
            "AND next_attempt_at <= clock_timestamp()", (namespace_ids,)))
        if left[0] == 0:
            return


async def test_edit_during_embedding_is_not_overwritten_by_the_stale_vector(
        pool: AsyncConnectionPool, db: psycopg.Connection, ns: str) -> None:
    memory_id = insert(db, ns, "first version")

    def edit() -> None:
        db.execute("UPDATE memories SET content = 'second version' WHERE id = %s", (memory_id,))

    indexer = Indexer(pool, ScriptedEmbedder(during=edit), batch_size=500)
    await indexer.run_once()
    has_vector, model, attempts, _ = state(db, memory_id)
    assert not has_vector and model is None  # the stale vector was not written
    assert attempts == 0  # the edit re-enqueued a fresh job
    second = ScriptedEmbedder()
    await drain(Indexer(pool, second, batch_size=500), [memory_id], db)
    assert state(db, memory_id)[:2] == (True, LIVE_MODEL)
    assert "second version" in second.seen


async def test_delete_during_embedding_writes_nothing(
        pool: AsyncConnectionPool, db: psycopg.Connection, ns: str) -> None:
    memory_id = insert(db, ns, "soon deleted")

    def delete() -> None:
        db.execute("UPDATE memories SET deleted_at = now() WHERE id = %s", (memory_id,))

    await Indexer(pool, ScriptedEmbedder(during=delete), batch_size=500).run_once()
    assert state(db, memory_id) == (False, None, None, None)


async def test_failure_backs_off_and_records_the_error(
        pool: AsyncConnectionPool, db: psycopg.Connection, ns: str) -> None:
    memory_id = insert(db, ns, "will fail once")
    indexer = Indexer(pool, ScriptedEmbedder(fail=RuntimeError("model down")), batch_size=500,
                      base_backoff_s=30, max_backoff_s=60)
    result = await indexer.run_once()
    assert result.failed >= 1 and "model down" in result.error
    has_vector, _, attempts, error = state(db, memory_id)
    assert not has_vector and attempts == 1 and "model down" in error
    due = one_row(db.execute("SELECT next_attempt_at > clock_timestamp() + interval '20 seconds' "
                             "FROM embedding_jobs WHERE memory_id = %s", (memory_id,)))[0]
    assert due  # backed off, not retried in a hot loop


async def test_a_batch_that_runs_out_of_time_halves_the_next_claim(
        pool: AsyncConnectionPool, db: psycopg.Connection, ns: str) -> None:
    """A slow model must not leave the indexer retrying a batch it can never finish in time:
    each timeout halves the claim (down to one), each batch in time doubles it back (after
    probe_after batches in time, up to the batch size)."""
    ids = [insert(db, ns, f"slow text {i}") for i in range(3)]
    slow = ScriptedEmbedder(fail=TimeoutError("embedding the batch took longer than the timeout"))
    indexer = Indexer(pool, slow, batch_size=4, base_backoff_s=0.01, max_backoff_s=0.01,
                      probe_after=1)
    due_now = ("UPDATE embedding_jobs SET next_attempt_at = clock_timestamp() "
               "WHERE memory_id = ANY(%s::uuid[])")
    sizes = []
    for _ in range(3):
        db.execute(due_now, (ids,))
        await indexer.run_once()
        sizes.append(indexer.sizing.claim_size)
    assert sizes == [2, 1, 1]
    assert indexer.sizing.last_claim == 1 and len(slow.seen) <= 4 + 2 + 1
    indexer.embed_documents = ScriptedEmbedder(fail=RuntimeError("model down"))
    db.execute(due_now, (ids,))
    await indexer.run_once()
    assert indexer.sizing.claim_size == 1  # only running out of time shrinks it
    indexer.embed_documents = ScriptedEmbedder()
    db.execute(due_now, (ids,))
    await indexer.run_once()
    await indexer.run_once()
    assert indexer.sizing.claim_size == 4
    await drain(indexer, ids, db)
    assert all(state(db, i)[0] for i in ids)


class SizeLimitedEmbedder(ScriptedEmbedder):
    """Runs out of time on any batch of more than `limit` texts (a slow model on long texts)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit
        self.batches: list[int] = []

    async def __call__(self, texts: list[str]) -> Embeddings:
        self.batches.append(len(texts))
        if len(texts) > self.limit:
            raise TimeoutError("embedding the batch took longer than the timeout")
        return await super().__call__(texts)


async def test_a_claim_that_ran_out_of_time_is_not_tried_again_batch_after_batch(
        pool: AsyncConnectionPool, db: psycopg.Connection, ns: str) -> None:
    # 8 fails; 4 is done; back up to 6 (3/4 of 8), which fails; 3; then 4 (3/4 of 6), and it
    # stays there: doubling straight back to the size that failed threw away every other batch.
    ids = [insert(db, ns, f"long text {i}") for i in range(40)]
    embedder = SizeLimitedEmbedder(limit=5)
    indexer = Indexer(pool, embedder, batch_size=8, base_backoff_s=0.0, max_backoff_s=0.0,
                      probe_after=50)
    await drain(indexer, ids, db)
    assert all(state(db, i)[0] for i in ids)
    assert embedder.batches[:6] == [8, 4, 6, 3, 4, 4]
    assert sum(1 for n in embedder.batches if n > 5) == 2
    # After probe_after batches in time the size that failed is forgotten and tried again.
    indexer.sizing.probe_after = 1
    more = [insert(db, ns, f"more text {i}") for i in range(16)]
    embedder.batches.clear()
    await drain(indexer, more, db)
    assert 8 in embedder.batches or 6 in embedder.batches


async def test_a_job_for_a_sensitive_memory_is_dropped_unread(
        pool: AsyncConnectionPool, db: psycopg.Connection, ns: str) -> None:
    memory_id = insert(db, ns, "secret text never embedded", sensitive=True)
    # Simulate a job that should never exist (e.g. written by hand).
    db.execute("INSERT INTO embedding_jobs (memory_id) VALUES (%s)", (memory_id,))
    embedder = ScriptedEmbedder()
    await drain(Indexer(pool, embedder, batch_size=500), [memory_id], db)
    assert "secret text never embedded" not in embedder.seen
    assert state(db, memory_id) == (False, None, None, None)


async def test_vectors_of_another_model_are_refused(
        pool: AsyncConnectionPool, db: psycopg.Connection, ns: str) -> None:
    memory_id = insert(db, ns, "embedded by the wrong model")
    indexer = Indexer(pool, ScriptedEmbedder(model="not-the-live-model"), batch_size=500)
    result = await indexer.run_once()
    assert "not-the-live-model" in result.error
    has_vector, _, attempts, error = state(db, memory_id)
    assert not has_vector and attempts == 1 and "not-the-live-model" in error


# ----------------------------------------------------------------- poison jobs


class PoisonEmbedder(ScriptedEmbedder):
    """Fails (like a model that cannot handle a text) any call with a text containing POISON."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    async def __call__(self, texts: list[str]) -> Embeddings:
        self.calls.append(list(texts))
        if any("POISON" in t for t in texts):
            raise RuntimeError("the model failed on an input")
        return await super().__call__(texts)


def job_row(db: psycopg.Connection, memory_id: str) -> tuple[Any, ...] | None:
    """The embedding job of memory_id (None: it has none)."""
    return db.execute(
        "SELECT attempts, failures, parked_at IS NOT NULL, last_error, "
        "next_attempt_at = 'infinity' FROM embedding_jobs WHERE memory_id = %s",
        (memory_id,)).fetchone()


def job(db: psycopg.Connection, memory_id: str) -> tuple[Any, ...]:
    row = job_row(db, memory_id)
    assert row is not None
    return row


def make_due(db: psycopg.Connection, ids: list[str]) -> None:
    db.execute("UPDATE embedding_jobs SET next_attempt_at = clock_timestamp() "
               "WHERE memory_id = ANY(%s::uuid[]) AND parked_at IS NULL", (ids,))


async def test_a_poison_text_is_split_off_retried_and_parked(
        pool: AsyncConnectionPool, db: psycopg.Connection, ns: str) -> None:
    good = [insert(db, ns, f"an ordinary note number {i}") for i in range(9)]
    bad = insert(db, ns, "a POISON note the model cannot embed")
    embedder = PoisonEmbedder()
    indexer = Indexer(pool, embedder, batch_size=500, base_backoff_s=30, max_backoff_s=60,
                      max_attempts=3)
    result = await indexer.run_once()
    # The rest of the batch is embedded in the same round; the poison one failed alone.
    assert all(state(db, i)[:2] == (True, LIVE_MODEL) for i in good)
    assert result.poisoned == 1 and result.parked == 0 and not result.error
    assert any("a POISON note the model cannot embed" in c and len(c) > 1
               for c in embedder.calls)  # it was batched with others first
    assert ["a POISON note the model cannot embed"] in embedder.calls  # then alone
    attempts, failures, parked, error, _ = job(db, bad)
    assert (attempts, failures, parked) == (1, 1, False) and "failed on an input" in error
    due_later = one_row(db.execute(
        "SELECT next_attempt_at > clock_timestamp() + interval '20 seconds' "
        "FROM embedding_jobs WHERE memory_id = %s", (bad,)))[0]
    assert due_later  # its own backoff
    for _ in range(2):
        make_due(db, [bad])
        result = await indexer.run_once()
    attempts, failures, parked, error, never_due = job(db, bad)
    assert (attempts, failures, parked, never_due) == (3, 3, True, True)
    assert "failed on an input" in error and result.parked == 1
    # Parked: never claimed again, not pending, counted apart.
    make_due(db, [bad])
    embedder.calls.clear()
    await indexer.run_once()
    assert not any("POISON" in t for c in embedder.calls for t in c)
    waiting = one_row(db.execute("SELECT count(*) FROM embedding_jobs WHERE parked_at IS NULL "
                                 "AND memory_id = %s", (bad,)))[0]
    assert waiting == 0
    await indexer.pending()
    parked_gauge = REGISTRY.get_sample_value("recallmesh_indexer_parked_jobs")
    assert parked_gauge is not None and parked_gauge >= 1
    # An edit gives it a fresh start (new content, new job).
    db.execute("UPDATE memories SET content = 'a fixed note' WHERE id = %s", (bad,))
    assert job(db, bad)[:3] == (0, 0, False)
    await drain(indexer, [bad], db)
    assert state(db, bad)[:2] == (True, LIVE_MODEL)


async def test_a_service_that_fails_every_text_parks_nothing(
        pool: AsyncConnectionPool, db: psycopg.Connection, ns: str) -> None:
    """INTERNAL-like failures for every text (the probe too) are an outage: backoff only."""
    ids = [insert(db, ns, f"note during a broken model {i}") for i in range(4)]
    indexer = Indexer(pool, ScriptedEmbedder(fail=RuntimeError("session broken")),
                      batch_size=500, base_backoff_s=0.01, max_backoff_s=0.01, max_attempts=2)
    for _ in range(4):
        make_due(db, ids)
        result = await indexer.run_once()
        assert "session broken" in result.error and result.poisoned == 0
    assert all(job(db, i)[1:3] == (0, False) for i in ids)
    assert all(job(db, i)[0] >= 4 for i in ids)


async def test_parked_jobs_list_retry_and_drop(
        pool: AsyncConnectionPool, db: psycopg.Connection, ns: str, own_dsn: str) -> None:
    from recallmesh.services.indexer import jobs

    a = insert(db, ns, "POISON alpha")
    b = insert(db, ns, "POISON beta")
    ok = insert(db, ns, "not parked")
    indexer = Indexer(pool, PoisonEmbedder(), batch_size=500, base_backoff_s=0.01,
                      max_backoff_s=0.01, max_attempts=1)
    await drain(indexer, [a, b, ok], db)
    listed = jobs.list_parked(db, ns)
    assert {j.memory_id for j in listed} == {a, b}
    assert all(j.namespace == ns and j.failures == 1 and "failed on an input" in j.last_error
               for j in listed)
    assert jobs.count_parked(db, ns) == 2
    with pytest.raises(jobs.NotParked, match=ok):
        jobs.retry(db, [a, ok])
    assert jobs.count_parked(db, ns) == 2  # all or nothing
    assert jobs.retry(db, [a]) == [a]
    assert job(db, a)[:3] == (0, 0, False)
    assert jobs.drop(db, None, ns) == [b]
    assert job_row(db, b) is None and state(db, b)[:2] == (False, None)
    assert jobs.list_parked(db, ns) == []


async def test_a_memory_whose_write_fails_is_split_off_and_the_rest_written(
        pool: AsyncConnectionPool, db: psycopg.Connection, ns: str) -> None:
    """Issue 65: one failing write failed the indexer's whole batch, again and again. A write
    that fails for a reason that may be one memory's is split in halves: the others are
    written, and the memory that fails alone counts a failure of its job (parked at
    max_attempts), as a poison text does. The failure here is real: a trigger of this scratch
    database refuses one memory's vector."""
    db.execute("CREATE FUNCTION refuse_vector() RETURNS trigger LANGUAGE plpgsql AS $$ "
               "BEGIN RAISE EXCEPTION 'this row refuses its vector' "
               "USING ERRCODE = 'check_violation'; END $$")
    db.execute("CREATE TRIGGER refuse_vector BEFORE UPDATE OF embedding ON memories FOR EACH "
               "ROW WHEN (NEW.content LIKE '%%refuses its vector%%') "
               "EXECUTE FUNCTION refuse_vector()")
    try:
        good = [insert(db, ns, f"a note that takes its vector {i}") for i in range(7)]
        bad = insert(db, ns, "a note that refuses its vector")
        indexer = Indexer(pool, ScriptedEmbedder(), batch_size=500, base_backoff_s=30,
                          max_backoff_s=60, max_attempts=2)
        result = await indexer.run_once()
        assert all(state(db, i)[:2] == (True, LIVE_MODEL) for i in good)
        assert result.indexed >= 7 and result.poisoned == 1 and not result.error
        attempts, failures, parked, error, _ = job(db, bad)
        assert (attempts, failures, parked) == (1, 1, False)
        assert "writing its vector failed" in error and "refuses its vector" in error
        make_due(db, [bad])
        result = await indexer.run_once()
        assert job(db, bad)[1:3] == (2, True) and result.parked == 1
    finally:
        db.execute("DROP TRIGGER refuse_vector ON memories")
        db.execute("DROP FUNCTION refuse_vector()")


class OneConceptEach:
    """An extractor whose every memory mentions one concept: its text."""

    name = "scripted"

    def extract(self, texts: Any, tags: Any) -> list[Any]:
        from recallmesh.services.graph.extraction import Extraction, Mention

        return [Extraction(mentions=(Mention(t, "phrase", 1.0),), aliases=frozenset({t}))
                for t in texts]


async def test_a_concept_purged_under_the_cache_is_never_linked(
        pool: AsyncConnectionPool, db: psycopg.Connection, ns: str) -> None:
    """Issue 65: while a purge ran, the indexer's batch failed on
    concept_aliases_concept_id_fkey: a new surface form merged into a concept the indexer had
    cached, which the purge had deleted. The batch now takes its namespaces' write locks (the
    purge waits, or went first), and a cached concept no longer in the table makes it read the
    namespace's concepts again. The scripted names embed by their length: 'maya' and 'mila'
    are one concept to the merge rule."""
    from recallmesh.services.indexer.concepts import ConceptWriter

    concepts = ConceptWriter(OneConceptEach(), merge_threshold=0.9)
    indexer = Indexer(pool, ScriptedEmbedder(), batch_size=500, concepts=concepts)
    first = insert(db, ns, "maya")
    await drain(indexer, [first], db)
    other = insert(db, ns, "zed")  # a new form: the namespace's concepts (maya) are cached
    await drain(indexer, [other], db)
    assert one_row(db.execute("SELECT count(*) FROM concepts WHERE namespace = %s",
                              (ns,)))[0] == 2
    db.execute("SELECT recallmesh_purge_memory(%s, %s)", (ns, first))
    assert one_row(db.execute("SELECT count(*) FROM concepts WHERE namespace = %s",
                              (ns,)))[0] == 1  # maya went with its only evidence; cached
    second = insert(db, ns, "mila")
    result = await indexer.run_once()
    assert not result.error and state(db, second)[:2] == (True, LIVE_MODEL)
    linked = db.execute("SELECT c.name FROM memory_concepts mc JOIN concepts c "
                        "ON c.id = mc.concept_id WHERE mc.memory_id = %s", (second,)).fetchall()
    assert linked == [("mila",)]


class CountingEmbedder(ScriptedEmbedder):
    """Takes a moment per call and records how many calls were running at once."""

    def __init__(self) -> None:
        super().__init__()
        self.running = 0
        self.most_at_once = 0
        self.calls: list[list[str]] = []

    async def __call__(self, texts: list[str]) -> Embeddings:
        self.calls.append(list(texts))
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        try:
            await asyncio.sleep(0.05)
            return await super().__call__(texts)
        finally:
            self.running -= 1


async def test_the_next_batch_embeds_while_the_last_one_is_written(
        pool: AsyncConnectionPool, db: psycopg.Connection, own_dsn: str, ns: str) -> None:
    """Issue 68: the model sat idle while each batch was written. run_forever keeps two
    batches in flight, one embedding while the one before it is written, and never two
    embedding at once. The write is held here by the real namespace write lock every writer
    takes: while it is held, the second batch is embedded all the same."""
    ids = [insert(db, ns, f"pipelined note {i}") for i in range(4)]
    embedder = CountingEmbedder()
    indexer = Indexer(pool, embedder, batch_size=2)
    stop = asyncio.Event()

    async def no_work(timeout_s: float) -> None:
        await asyncio.sleep(min(timeout_s, 0.05))

    def our_batches() -> int:  # embedding calls that carried our texts (another test's
        # leftover job may share a batch with one of ours; it changes nothing here)
        return sum(1 for call in embedder.calls if any(t.startswith("pipelined note")
                                                        for t in call))

    with psycopg.connect(own_dsn) as holder:  # a transaction that holds the namespace's lock
        holder.execute("SELECT recallmesh_lock_for_write(%s::text[], '{}'::uuid[])", ([ns],))
        loop = asyncio.create_task(run_forever(indexer, no_work, stop, poll_s=0.05))
        try:
            for _ in range(60):  # within the write lock's timeout (5 s)
                if our_batches() >= 2:
                    break
                await asyncio.sleep(0.05)
            assert our_batches() >= 2  # the next batch embedded while the first waits to write
            assert not any(state(db, i)[0] for i in ids)
        finally:
            holder.rollback()  # the lock goes; the writes go through
        try:
            for _ in range(100):
                if all(state(db, i)[0] for i in ids):
                    break
                await asyncio.sleep(0.05)
            assert all(state(db, i)[:2] == (True, LIVE_MODEL) for i in ids)
            assert embedder.most_at_once == 1
        finally:
            stop.set()
            await asyncio.wait_for(loop, 5)


async def test_loops_that_share_one_wait_listen_once() -> None:
    """The loops in flight wait for work through one LISTEN connection: one of them calls
    wait_for_work, the others return when it does."""
    calls = 0
    release = asyncio.Event()

    async def wait_for_work(timeout_s: float) -> None:
        nonlocal calls
        calls += 1
        await release.wait()

    wait = _SharedWait(wait_for_work)
    waiters = [asyncio.create_task(wait(10.0)) for _ in range(3)]
    await asyncio.sleep(0.05)
    assert calls == 1 and not any(w.done() for w in waiters)
    release.set()
    await asyncio.wait_for(asyncio.gather(*waiters), 1)
    assert calls == 1
