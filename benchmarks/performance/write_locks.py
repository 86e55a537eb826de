"""What each of the writers' locks prevents, on a server with pg_textsearch 1.0 (issue 65,
docs/decisions/0020-write-locks.md).

  python -m benchmarks.performance.write_locks [--rounds 20] [--wait-s 5]
      [--report-to FILE.md] [--json FILE]

An embedded Postgres of its own that loads pg_textsearch 1.0, migrated. Every write
transaction's first statement is recallmesh_lock_for_write (migration 0018); here it is
replaced, between runs, by three variants of itself:

  - `namespace` : the namespace's write lock only (what every write took before issue 65);
  - `+ ids`     : and the memory ids the write names;
  - `+ writer`  : and the BM25 index's writer lock (the shipped function).

Two races, --rounds times each per variant, through the gateway's own store code:

  1. the issue's repro: an Import of 150 records and id X into namespace A, at the same moment
     as a Store of X into namespace B;
  2. a writer of rows in many namespaces (as the re-embed run's batches are: no namespace lock)
     updating row 1 then row 2 in one transaction, while the gateway's Update of row 2 arrives
     between the two.

A round is stuck when a call has not answered after --wait-s seconds; the server is then
stopped with `pg_ctl -m immediate` (nothing less ends those backends) and started again.
Prints, for each variant and race, rounds done and stuck.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.harness.script import log, machine_info, publish
from recallmesh.gateway import history
from recallmesh.gateway.store import MemoryStore
from recallmesh.migrations.vector_schema import prepare_database
from recallmesh.shared.db import LOCK_FOR_WRITE, WRITE, open_pool, write_lock_params
from recallmesh.shared.embedded import embedded_dsn, kill_embedded, start_embedded
from recallmesh.wire.memory_fields import NewMemory
from recallmesh.wire.validation import ImportedMemory

# The variants' bodies of recallmesh_lock_for_write (the shipped one is migration 0018's).
_NAMESPACES = """
    FOR k IN SELECT DISTINCT hashtextextended('recallmesh.namespace:' || n, 0)
             FROM unnest(namespaces) n ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(k);
    END LOOP;"""
_IDS = """
    FOR k IN SELECT DISTINCT hashtextextended('recallmesh.memory:' || i::text, 0)
             FROM unnest(ids) i ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock(k);
    END LOOP;"""
_WRITER = """
    IF recallmesh_bm25_index_holds_lock() THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('recallmesh.bm25-index-writer', 0));
    END IF;"""
VARIANTS = {"namespace": _NAMESPACES, "+ ids": _NAMESPACES + _IDS,
            "+ writer": _WRITER + _NAMESPACES + _IDS}


def install(dsn: str, body: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE OR REPLACE FUNCTION recallmesh_lock_for_write(namespaces text[], "
            "ids uuid[] DEFAULT '{}') RETURNS void LANGUAGE plpgsql AS $$ DECLARE k bigint; "
            f"BEGIN {body} END $$")


async def repro(store: MemoryStore, wait_s: float) -> bool:
    """Race 1; True when it answered in time."""
    now, x = datetime.now(UTC), str(uuid.uuid4())
    records = [ImportedMemory(NewMemory(content=f"imported note {i} about the harbour",
                                        id=str(uuid.uuid4()), created_at=now), now, (), ())
               for i in range(150)]
    records.append(ImportedMemory(NewMemory(content="the id both want", id=x,
                                            created_at=now), now, (), ()))
    tag = uuid.uuid4().hex[:8]
    calls = asyncio.gather(
        history.import_records(store, f"a-{tag}", records, "drill"),
        store.store(f"b-{tag}", NewMemory(content="the id both want", id=x)),
        return_exceptions=True)
    try:
        await asyncio.wait_for(calls, wait_s)
    except TimeoutError:
        return False
    return True


async def row_writer(store: MemoryStore, dsn: str, wait_s: float) -> bool:
    """Race 2; True when it answered in time."""
    first, _ = await store.store(f"r1-{uuid.uuid4().hex[:8]}", NewMemory(content="row one"))
    second, _ = await store.store(f"r2-{uuid.uuid4().hex[:8]}", NewMemory(content="row two"))

    def run_rows() -> None:
        with psycopg.connect(dsn) as conn:
            conn.execute(LOCK_FOR_WRITE, write_lock_params([]))
            conn.execute("UPDATE memories SET importance = 0.9 WHERE id = %s", (first.id,))
            time.sleep(0.5)  # the Update arrives meanwhile
            conn.execute("UPDATE memories SET importance = 0.9 WHERE id = %s", (second.id,))

    rows = asyncio.create_task(asyncio.to_thread(run_rows))
    await asyncio.sleep(0.2)
    update = store.update(second.namespace, second.id, {"importance": 0.1})
    try:
        await asyncio.wait_for(asyncio.gather(rows, update, return_exceptions=True), wait_s)
    except TimeoutError:
        return False
    return True


def restart(server: Any) -> None:
    """Stop the server with -m immediate (stuck backends ignore SIGTERM), start it again."""
    kill_embedded(server)
    server.ensure_postgres_running()
    time.sleep(1)


async def drill(dsn: str, server: Any, rounds: int, wait_s: float) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for variant, body in VARIANTS.items():
        for race in ("repro", "row writer"):
            install(dsn, body)
            stuck = 0
            for _ in range(rounds):
                pool = await open_pool(dsn, name="drill", query_class=WRITE)
                store = MemoryStore(pool)
                ok = await (repro(store, wait_s) if race == "repro"
                            else row_writer(store, dsn, wait_s))
                if not ok:
                    stuck += 1
                    restart(server)  # the pool's connections die with it
                await asyncio.wait_for(pool.close(), 10)
            rows.append({"locks": variant, "race": race, "rounds": rounds, "stuck": stuck})
            log(f"{variant:10} {race:10} stuck {stuck} of {rounds}")
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--wait-s", type=float, default=5.0)
    parser.add_argument("--report-to", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="recallmesh-write-locks-") as tmp:
        Path(tmp).chmod(0o755)
        server = start_embedded(Path(tmp) / "pg", cleanup_mode="delete", textsearch=True)
        dsn = embedded_dsn(server)
        engine = prepare_database(dsn)
        if not engine.startswith("pg_textsearch 1.0"):
            raise SystemExit(f"needs pg_textsearch 1.0 (its lock is the subject): {engine}")
        try:
            rows = asyncio.run(drill(dsn, server, args.rounds, args.wait_s))
        finally:
            install(dsn, VARIANTS["+ writer"])
            subprocess.run(["sync"], check=False)
    lines = ["# The writers' locks against pg_textsearch 1.0's lock", "",
             "`python -m benchmarks.performance.write_locks"
             f" --rounds {args.rounds} --wait-s {args.wait_s:g}` on {engine}, "
             f"{machine_info()['cpu_count']} CPUs. A round is stuck when a call has not answered "
             f"after {args.wait_s:g} s (the server is then killed and started again).", "",
             "| first statement of every write takes | race | rounds | stuck |",
             "|---|---|---|---|"]
    lines += [f"| {r['locks']} | {r['race']} | {r['rounds']} | {r['stuck']} |" for r in rows]
    publish("\n".join(lines) + "\n", args.report_to, args.json, rows)


if __name__ == "__main__":
    main()
