"""The async engine: a SQLite file in the data dir by default (WAL on), PostgreSQL via psycopg 3."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from kernel.base.jsoncodec import loads as json_loads
from kernel.db.compiled import shared_cache

log = logging.getLogger("svc.db")


def default_sqlite_path(data_dir: Path) -> Path:
    return data_dir / "svc.sqlite3"


def _create_private(database: str | None) -> None:
    """Create a SQLite file that does not exist yet as 0600 (an empty file is an empty database),
    before SQLite would create it world-readable; its journal and write-ahead log take the
    file's mode."""
    if not database or database == ":memory:" or database.startswith("file:"):
        return
    path = Path(database)
    if path.exists() or not path.parent.is_dir():
        return
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass


def _private_on_connect(url: str) -> Any:
    """A ``do_connect`` listener creating the SQLite file 0600 when a connection is about to open
    it (not before: a command that opens no database, ``svc plugins list``, leaves none behind)."""
    database = make_url(url).database

    def do_connect(dialect: Any, conn_rec: Any, cargs: Any, cparams: Any) -> None:
        _create_private(database)

    return do_connect


def _normalise(url: str) -> Any:
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        return parsed.set(drivername="sqlite")
    raise ValueError(f"unsupported database {backend!r}: use sqlite or postgresql")


def async_url(url: str) -> str:
    parsed = _normalise(url)
    if parsed.get_backend_name() == "sqlite":
        from kernel.db import sqlite_driver  # registers the dialect (one hop per statement)

        parsed = parsed.set(drivername=f"sqlite+{sqlite_driver.DRIVER}")
    return parsed.render_as_string(hide_password=False)


def sync_url(url: str) -> str:
    return _normalise(url).render_as_string(hide_password=False)


# Deleted content is overwritten with zeros (in its page, and a page that leaves the b-tree), so
# the file and its write-ahead log never keep an erased value in free space or on the freelist.
# Set on every connection: the build's default (SQLITE_SECURE_DELETE) differs between builds.
SECURE_DELETE = "PRAGMA secure_delete=ON"


def _sqlite_secure_delete(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute(SECURE_DELETE)
    cur.close()


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    # WAL lets readers and the writer proceed together; busy_timeout rides out short write locks
    # between workers; NORMAL sync is safe with WAL (a crash can lose the last commit, not corrupt).
    # The driver's own implicit BEGIN (only before the first INSERT/UPDATE/DELETE) is turned off:
    # _sqlite_begin emits it, so every transaction covers its reads too.
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute(SECURE_DELETE)
    cur.close()


def _stamp_opened(dbapi_connection: Any, record: Any) -> None:
    record.info["svc_opened"] = time.monotonic()


def _stamp_checkin(dbapi_connection: Any, record: Any) -> None:
    record.info["svc_checkin"] = time.monotonic()


def _sqlite_begin(conn: Any) -> None:
    # A write transaction takes SQLite's write lock at BEGIN (IMMEDIATE), so it can never fail
    # half-way with SQLITE_BUSY when another writer committed after its first read; readers
    # take a snapshot (DEFERRED).
    options = conn.get_execution_options()
    reads = options.get("svc_autocommit", False)
    # The driver runs a Database.read connection's statements inline, within a budget
    # (kernel.db.sqlite_driver); every other use of a pooled connection hops as before.
    conn.connection.dbapi_connection.reads_inline = reads
    if reads:  # Database.read: each statement on its own
        return
    conn.exec_driver_sql("BEGIN IMMEDIATE" if options.get("svc_write", False) else "BEGIN")


class NestedWriteError(RuntimeError):
    """A task opened a write transaction (``Database.begin``, so a unit of work too) while its
    own write transaction was still open: a programming error, never a client's.

    The usual cause is a bus filter writing through a plugin API without the unit of work it
    runs in (``items.api.create(ctx, ..., uow=ctx.uow)`` joins it). The inner transaction would
    be a second connection: on SQLite it waits for the write lock its own task holds (until
    the busy timeout, then "database is locked"); on PostgreSQL it waits on the row locks of
    the outer transaction, or commits on its own and escapes the outer one's rollback.
    Raised at once, before any waiting; the error handler answers 500 INTERNAL and logs it.
    """


class _OpenWrite:
    """The write transaction a task has open (``_open_write``): its database, the task, and
    whether it still is open."""

    __slots__ = ("database", "task", "open")

    def __init__(self, database: Database, task: asyncio.Task[Any] | None) -> None:
        self.database = database
        self.task = task
        self.open = True


# The write transactions the current task has open, on both dialects (also the SQLite write
# gate's holder). A second ``begin`` on the same database in the same task while it is open
# raises NestedWriteError (another database, another file or server, is not a nesting).
# A task started inside it (``asyncio.gather`` in a filter) inherits this context: while the
# transaction is open it does not wait on the gate its parent holds (reads only there, as
# before); once closed, it is a writer like any other.
_open_write: ContextVar[tuple[_OpenWrite, ...]] = ContextVar("svc_open_write", default=())

NESTED_WRITE_MESSAGE = (
    "a write transaction was opened while this task's own write transaction is open: join the "
    "open one instead (in a bus filter, pass the unit of work on: uow=ctx.uow; in a unit of "
    "work, use uow.conn / uow.db). On SQLite it would wait on its own write lock, on PostgreSQL "
    "on its own row locks, or commit outside the outer transaction.")


class _FileLock:
    """An exclusive ``flock`` on ``<database file>-writelock``, shared by every process that
    writes the file: a writer waits in the kernel, woken when the holder releases, instead of
    polling in SQLite's busy handler (which sleeps up to 100 ms between tries, and made the p99
    of writes from two workers 3 to 5 times their p50). Taken in a thread; if the waiting task
    is cancelled, the lock is released as soon as the thread gets it."""

    # After waiting for another process, this one stops taking the lock on the fast path for a
    # while: ``flock`` hands nothing over, so a holder that releases and at once re-takes it
    # for its next queued writer would win against the other process's woken waiter again and
    # again (a write p99 of several times the p50). Waiting in the kernel like the other side,
    # the two processes take turns.
    CONTENDED_FOR = 0.25  # seconds

    def __init__(self, path: str) -> None:
        self.path = path
        self.fd: int | None = None
        self.contended_until = 0.0
        self.held = False
        self.taken_at = 0.0

    def held_for(self) -> float:
        return time.monotonic() - self.taken_at

    async def acquire(self) -> None:
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fd = self.fd
        if time.monotonic() >= self.contended_until:
            try:  # free and uncontended: no thread
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                self._taken()
                return
            except BlockingIOError:
                pass
        self.contended_until = time.monotonic() + self.CONTENDED_FOR
        pending = asyncio.get_running_loop().run_in_executor(None, fcntl.flock, fd, fcntl.LOCK_EX)
        try:
            await asyncio.shield(pending)
        except asyncio.CancelledError:
            pending.add_done_callback(lambda f: f.exception() or fcntl.flock(fd, fcntl.LOCK_UN))
            raise
        self._taken()

    def _taken(self) -> None:
        self.held, self.taken_at = True, time.monotonic()

    def release(self) -> None:
        if self.fd is not None and self.held:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
        self.held = False

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self.held = False


def _sqlite_file(url: str) -> str | None:
    database = _normalise(url).database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return database


SQLITE_RECYCLE = 300  # seconds a pooled SQLite connection lives
BUSY_TIMEOUT_MS = 10_000  # SQLite's busy timeout on every connection
# Database.checkpoint: tries, each waiting this long (seconds) for readers on an older snapshot,
# with this pause between them.
CHECKPOINT_ATTEMPTS = 3
CHECKPOINT_WAIT = 1.0
CHECKPOINT_PAUSE = 0.2
# While writers of this process queue at its write gate, the file lock passes from one to the
# next for up to this long before it is let go for other processes' writers.
FILE_LOCK_BATCH = 0.02
# A SQLite writer checks its pooled connection out before it waits for its turn (the checkout
# is then no work inside the write lock) while fewer than this many writers of the process are
# queued; past it, after, so that queued writers do not hold the pool that readers need.
CONNECTED_WHILE_QUEUED = 8
PING_IDLE_SECONDS = 1.0  # a pooled PostgreSQL connection idle this long is pinged at checkout
PG_CONNECT_TIMEOUT = 10  # SVC_DB_CONNECT_TIMEOUT's default (unless the URL sets connect_timeout)
PG_COMMAND_TIMEOUT = 30.0  # SVC_DB_COMMAND_TIMEOUT's default
POOL_TIMEOUT = 10.0  # SVC_DB_POOL_TIMEOUT's default


def _bounded_connector(command_timeout: float, *, sync: bool = False) -> Any:
    """psycopg's ``AsyncConnection.connect`` for SQLAlchemy (``async_creator_fn``), or with
    ``sync`` its ``Connection.connect`` (``sync_engine``'s ``do_connect``), returning connections
    whose every wait on the server (a statement and its rows, a commit, a rollback, the checkout
    ping) ends after ``command_timeout`` seconds.

    A server that accepts but never answers (paused, a blackholed connection, a failover stuck
    half-way) would otherwise hold the request forever: TCP keeps the connection open (a paused
    process's kernel still acknowledges), and a server-side ``statement_timeout`` is enforced by
    the very server that is not running. psycopg's ``wait`` takes a timeout; past it the
    connection is in an unknown state (the answer may still come), so it is closed, and the
    error is an ``OperationalError`` without SQLSTATE: SQLAlchemy drops the connection from the
    pool (``is_disconnect``: closed), and the error handler answers 503 (``kernel.db.unavailable``).
    Not by cancelling the task: psycopg answers a cancellation by asking the server to cancel and
    waiting for it, up to ten more seconds against a server that does not answer.
    """
    import psycopg
    from psycopg import errors as pg_errors

    class CommandTimedOut(psycopg.OperationalError):
        """PostgreSQL did not answer a command in time; the connection was closed."""

    def timed_out(pgconn: Any) -> CommandTimedOut:
        pgconn.finish()
        return CommandTimedOut(f"PostgreSQL did not answer within {command_timeout:g} s "
                               "(SVC_DB_COMMAND_TIMEOUT); the connection was closed")

    if sync:
        class BoundedSyncConnection(psycopg.Connection):  # type: ignore[type-arg]
            def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
                if timeout is not None:  # psycopg's own bounded waits (notifies, cancellation)
                    return super().wait(gen, interval, timeout)
                try:
                    return super().wait(gen, interval, command_timeout)
                except pg_errors._WaitTimeout:  # noqa: SLF001 - what wait(timeout=) raises (documented there)
                    raise timed_out(self.pgconn) from None

        return BoundedSyncConnection.connect

    class BoundedConnection(psycopg.AsyncConnection):  # type: ignore[type-arg]
        async def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
            if timeout is not None:  # psycopg's own bounded waits (notifies, cancellation)
                return await super().wait(gen, interval, timeout)
            try:
                return await super().wait(gen, interval, command_timeout)
            except pg_errors._WaitTimeout:  # noqa: SLF001 - what wait(timeout=) raises (documented there)
                raise timed_out(self.pgconn) from None

    async def connect(*args: Any, **kwargs: Any) -> Any:
        return await BoundedConnection.connect(*args, **kwargs)

    return connect


def db_timeouts(settings: Any) -> dict[str, Any]:
    """``SVC_DB_CONNECT_TIMEOUT`` and ``SVC_DB_COMMAND_TIMEOUT`` as the keyword arguments of
    ``Database``, ``sync_engine`` and the migration runner: every engine a process builds from
    its settings (the app's, ``svc migrate``'s) is bounded alike."""
    return {"connect_timeout": settings.db_connect_timeout, "command_timeout": settings.db_command_timeout}


def _pg_connect_timeout(url: str, connect_timeout: int) -> dict[str, Any]:
    # A server that does not answer at all (a host gone, a dropped route) fails after this many
    # seconds instead of the system's TCP timeout. Whole seconds, at least 2 (libpq's rule,
    # which psycopg follows); a connect_timeout in the URL wins.
    if "connect_timeout" in _normalise(url).query:
        return {}
    return {"connect_timeout": connect_timeout}


def sync_engine(url: str, *, connect_timeout: int = PG_CONNECT_TIMEOUT,
                command_timeout: float = PG_COMMAND_TIMEOUT, **kwargs: Any) -> Engine:
    """A synchronous engine (Alembic's, ``svc migrate``'s) with the bounds of ``Database``: on
    PostgreSQL, opening a connection waits at most ``connect_timeout`` seconds and each answer
    ``command_timeout`` (0: none), so a paused server fails the command instead of hanging it."""
    engine = create_engine(sync_url(url), **kwargs)
    if _normalise(url).get_backend_name() == "sqlite":  # a migration that copies a table leaves no copy behind
        event.listen(engine, "connect", _sqlite_secure_delete)
        event.listen(engine, "do_connect", _private_on_connect(url))
    if _normalise(url).get_backend_name() == "postgresql":
        extra = _pg_connect_timeout(url, connect_timeout)
        connector = _bounded_connector(command_timeout, sync=True) if command_timeout > 0 else None

        @event.listens_for(engine, "do_connect")
        def bounded_connect(dialect: Any, conn_rec: Any, cargs: Any, cparams: dict[str, Any]) -> Any:
            cparams.update({k: v for k, v in extra.items() if k not in cparams})
            return connector(*cargs, **cparams) if connector is not None else None

    return engine


class Database:
    """The app's database: one async engine and the helpers around it."""

    def __init__(self, url: str, *, echo: bool = False, pool_size: int = 20, max_overflow: int = 10,
                 connect_timeout: int = PG_CONNECT_TIMEOUT, command_timeout: float = PG_COMMAND_TIMEOUT,
                 pool_timeout: float = POOL_TIMEOUT) -> None:
        """``connect_timeout`` and ``command_timeout`` (0: none) bound PostgreSQL's answers,
        ``pool_timeout`` the wait for a pooled connection (SVC_DB_* settings)."""
        self.url = url
        self.dialect = _normalise(url).get_backend_name()
        # Enough pooled connections for a busy worker: a connection over pool_size is closed when
        # it is returned, and opening one costs a thread and a schema read on SQLite (under 16
        # concurrent requests the default pool of 5 opened ~1.5 connections per request) and a
        # round of authentication on PostgreSQL.
        # JSON columns (item ``data``) decode with orjson where it reads as the standard library
        # does (kernel.http.media.loads): 2 us for an item where json.loads took 10, per row read.
        kwargs: dict[str, Any] = {"echo": echo, "pool_size": pool_size, "max_overflow": max_overflow,
                                  "json_deserializer": json_loads, "pool_timeout": pool_timeout}
        if self.dialect == "postgresql":
            # A pooled connection that died with a server restart is replaced at checkout instead
            # of failing the request (operations.md, Runbook: PostgreSQL restarted): _pg_checkout
            # pings the ones idle for PING_IDLE_SECONDS, not every one (pool_pre_ping's round trip
            # cost 0.15 ms of CPU per checkout, a sixth of a get). A busy connection that meets
            # a restart fails its statement; SQLAlchemy then invalidates the whole pool.
            # A server that does not answer fails the request as 503 after connect_timeout.
            connect_args: dict[str, Any] = _pg_connect_timeout(url, connect_timeout)
            if command_timeout > 0:
                connect_args["async_creator_fn"] = _bounded_connector(command_timeout)
            kwargs["connect_args"] = connect_args
        # SQLite: no pool_recycle. A SQLite connection plans with the statistics (sqlite_stat1)
        # it loaded when it opened; another connection's ANALYZE does not reach it. _checkout
        # replaces a pooled connection older than SQLITE_RECYCLE seconds (bounding how long other
        # processes plan without new statistics) or older than this process's last ANALYZE
        # (``reopen_connections``) itself: SQLAlchemy's recycling goes through terminate(), whose
        # shielded close can hang for ever (see _checkout).
        self.engine: AsyncEngine = create_async_engine(async_url(url), **kwargs)
        shared = shared_cache()
        if shared is not None:  # the test harness's engines share their compiled SQL (compiled.py)
            self.engine.sync_engine._compiled_cache = shared
        # SQLite has one writer at a time. Writers of this process queue here in arrival order
        # (SQLite's own busy handler sleeps and retries, and starves some writers under load),
        # then meet the writers of other processes at a file lock; BEGIN IMMEDIATE and the busy
        # timeout remain for anything else writing the file (migrations, the sqlite3 shell).
        self._write_gate: asyncio.Lock | None = None
        self._gate_waiting = 0  # writers of this process queued at the gate
        self._file_lock: _FileLock | None = None
        self._generation = 0  # reopen_connections
        if self.dialect == "postgresql":
            event.listen(self.engine.sync_engine, "checkout", self._pg_checkout)
            event.listen(self.engine.sync_engine, "checkin", _stamp_checkin)
        # ``read``'s connections come from a view of the engine that carries their options (one
        # ``execution_options`` call per read cost about 25 us). SQLite's driver is in autocommit
        # already (``_sqlite_begin`` skips the BEGIN); PostgreSQL's connection is set to it.
        self._reader = self.engine.execution_options(
            **({"svc_autocommit": True} if self.dialect == "sqlite" else {"isolation_level": "AUTOCOMMIT"}))
        if self.dialect == "sqlite":
            event.listen(self.engine.sync_engine, "do_connect", _private_on_connect(url))
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
            event.listen(self.engine.sync_engine, "connect", _stamp_opened)
            event.listen(self.engine.sync_engine, "begin", _sqlite_begin)
            event.listen(self.engine.sync_engine, "checkout", self._checkout)
            self._write_gate = asyncio.Lock()
            path = _sqlite_file(url)
            if path is not None:
                self._file_lock = _FileLock(path + "-writelock")

    @property
    def is_sqlite(self) -> bool:
        return self.dialect == "sqlite"

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A connection for reads, in autocommit: no ``BEGIN`` and ``ROLLBACK`` round trips
        around them (on PostgreSQL two of a get's three). Each statement reads its own snapshot,
        so a read of several statements can see a write that commits between two of them, as a
        client reading twice would. Never write through it: nothing makes two writes one."""
        async with self._reader.connect() as conn:
            yield conn

    @asynccontextmanager
    async def connect(self) -> AsyncIterator[AsyncConnection]:
        """A connection outside any transaction the caller controls (reads)."""
        async with self.engine.connect() as conn:
            yield conn

    @asynccontextmanager
    async def begin(self, *, inline: bool = False) -> AsyncIterator[AsyncConnection]:
        """A connection inside one write transaction, committed on success, rolled back on error.

        ``inline``: the transaction runs only short statements by key (an item write). On SQLite
        they then run on the event loop's thread while the write lock is held, ``BEGIN
        IMMEDIATE`` and ``COMMIT`` too, in stretches of at most ``sqlite_driver.INLINE_WINDOW``
        (kernel/db/sqlite_driver.py); PostgreSQL ignores it.

        On SQLite the writer's turn (``_take_turn``) ends as soon as the transaction has, before
        the connection goes back to the pool.

        Every transaction that may write goes through here (the unit of work does). One at a
        time per task: opening a second one while the task's own is open raises
        ``NestedWriteError`` at once (join the open transaction instead).
        """
        holders = _open_write.get()
        task = asyncio.current_task()
        outer = next((h for h in holders if h.open and h.database is self), None)
        if outer is not None:
            if outer.task is task:
                raise NestedWriteError(NESTED_WRITE_MESSAGE)
            # A task started inside another task's open transaction.
            async with self.engine.begin() as conn:
                yield conn
            return
        mine = _OpenWrite(self, task)
        token = _open_write.set((*holders, mine))
        try:
            if self._write_gate is None:
                async with self.engine.begin() as conn:
                    yield conn
                return
            turn = False
            try:
                if self._gate_waiting >= CONNECTED_WHILE_QUEUED:  # many queued: hold no connection waiting
                    await self._take_turn()
                    turn = True
                async with self.engine.connect() as conn:
                    # The pool's checkout and the connection's options are no work for the write
                    # lock: done before the turn, unless many writers of this process queue.
                    await conn.execution_options(svc_write=True)
                    raw = (await conn.get_raw_connection()).dbapi_connection
                    if not turn:
                        await self._take_turn()
                        turn = True
                    try:
                        if inline:  # from BEGIN IMMEDIATE on (it hops only to wait for another program)
                            raw.set_inline(True)
                        async with conn.begin():
                            yield conn
                    finally:
                        if inline:
                            raw.set_inline(False)
                        # Committed or rolled back, SQLite's write lock is free: the turn goes
                        # to the next writer now, not after the connection's close (a task of
                        # its own in SQLAlchemy, two turns of the loop with every other
                        # request's step in them).
                        if turn and not raw.transaction_open():
                            turn = False
                            self._give_turn()
            finally:
                if turn:
                    self._give_turn()
        finally:
            mine.open = False
            # A transaction closed in another context than it opened (a unit of work driven by
            # hand) cannot reset the variable there; closed, its entry no longer counts.
            with contextlib.suppress(ValueError):
                _open_write.reset(token)

    async def _take_turn(self) -> None:
        """SQLite: wait for this process's turn to write, its writers in arrival order at the
        write gate, then the file lock shared with other processes' writers. ``_give_turn``
        ends it."""
        assert self._write_gate is not None
        self._gate_waiting += 1
        try:
            await self._write_gate.acquire()
        finally:
            self._gate_waiting -= 1
        lock = self._file_lock
        if lock is not None and not lock.held:
            try:
                await lock.acquire()
            except BaseException:
                self._write_gate.release()
                raise

    def _give_turn(self) -> None:
        """End the turn ``_take_turn`` began: the file lock stays with this process while its
        next writer is queued (for up to ``FILE_LOCK_BATCH`` seconds), else it is let go."""
        assert self._write_gate is not None
        lock, keep = self._file_lock, False
        try:
            if lock is not None:
                keep = self._gate_waiting > 0 and lock.held_for() < FILE_LOCK_BATCH
                if not keep:
                    lock.release()
        finally:
            self._write_gate.release()
            if keep:
                # The next writer of this process (woken by the release above, and run
                # before this callback) writes under the file lock this one held: one
                # hand-over between processes per batch of FILE_LOCK_BATCH seconds, not one
                # per transaction. If that writer was cancelled instead, the lock goes here.
                asyncio.get_running_loop().call_soon(self._release_if_idle)

    @asynccontextmanager
    async def _writer_turn(self) -> AsyncIterator[None]:
        """SQLite: this process's turn to write for the length of the block (``_take_turn``)."""
        await self._take_turn()
        try:
            yield
        finally:
            self._give_turn()

    async def checkpoint(self, *, attempts: int | None = None, wait: float | None = None,
                         pause: float | None = None) -> bool:
        """SQLite: copy the write-ahead log into the database file and truncate the log to zero
        bytes (``PRAGMA wal_checkpoint(TRUNCATE)``), so the old page images it holds (values a
        transaction deleted, as they were before) are gone from the data dir and a hot copy of
        it. True when the log is empty afterwards.

        The checkpoint waits for this process's and other processes' writers (the writer's turn),
        then for readers still on an older snapshot, up to ``wait`` seconds (its busy timeout);
        a reader that holds one longer makes the attempt incomplete, and it is tried again after
        ``pause``, ``attempts`` times in all (defaults: the module's ``CHECKPOINT_*``). Never inside
        the task's own write transaction.
        PostgreSQL: nothing to do here, True (docs/privacy.md: dead tuples and the WAL)."""
        if not self.is_sqlite:
            return True
        if any(h.open and h.database is self and h.task is asyncio.current_task() for h in _open_write.get()):
            raise NestedWriteError(NESTED_WRITE_MESSAGE)  # it would wait for its own write lock
        attempts = CHECKPOINT_ATTEMPTS if attempts is None else attempts
        wait = CHECKPOINT_WAIT if wait is None else wait
        pause = CHECKPOINT_PAUSE if pause is None else pause
        for attempt in range(attempts):
            if attempt:
                await asyncio.sleep(pause)
            async with self._writer_turn(), self._reader.connect() as conn:
                try:
                    await conn.exec_driver_sql(f"PRAGMA busy_timeout={int(wait * 1000)}")
                    busy, _frames, _copied = (await conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")).one()
                    await conn.exec_driver_sql(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
                except BaseException:
                    await conn.invalidate()  # its busy timeout may be the short one: the pool opens another
                    raise
            if not busy:
                return True
            log.info("WAL checkpoint attempt %d of %d incomplete: a reader holds an older snapshot",
                     attempt + 1, attempts)
        return False

    async def ping(self) -> None:
        async with self.engine.connect() as conn:
            await conn.execute(text("SELECT 1"))

    def reopen_connections(self) -> None:
        """Have every pooled connection replaced at its next checkout (the pool closes it and
        opens another), for state a connection loads once: SQLite's planner statistics."""
        self._generation += 1

    def _release_if_idle(self) -> None:
        lock = self._file_lock
        if lock is not None and lock.held and not (self._write_gate and self._write_gate.locked()):
            lock.release()

    def _pg_checkout(self, dbapi_connection: Any, record: Any, proxy: Any) -> None:
        idle_since = record.info.get("svc_checkin")
        if idle_since is None or time.monotonic() - idle_since < PING_IDLE_SECONDS:
            return  # new, or in use a moment ago
        try:
            self.engine.dialect.do_ping(dbapi_connection)
        except Exception as exc:  # noqa: BLE001 - any failure: the pool opens another one
            raise DisconnectionError(f"pooled connection did not answer a ping: {exc}") from exc

    def _checkout(self, dbapi_connection: Any, record: Any, proxy: Any) -> None:
        """SQLite: replace a pooled connection opened before the last ``reopen_connections``
        or more than ``SQLITE_RECYCLE`` seconds ago.

        The connection is closed here, with an ordinary close in the task checking it out, and
        only then is the pool told to open another (DisconnectionError on an entry that holds no
        connection any more opens one without invalidating anything). Letting the pool replace
        it (invalidation, or ``pool_recycle``) closes it through the driver's ``terminate()``:
        for aiosqlite, a graceful close in a shielded task, and a forced stop of the
        connection's thread if the checking-out task is cancelled meanwhile. When that task and
        the shielded close are cancelled together (``asyncio.Runner.close`` cancelling the tasks
        left at the end of a test, or of a server), the forced stop can end the thread before
        the close queues its own stop, whose future then never completes: the loop's shutdown
        waited for it for ever (the suite's intermittent 300 s teardown stall). An ordinary
        close, cancelled, still waits for its own stop, which the live thread completes.
        """
        info = record.info
        stale = info.setdefault("svc_generation", self._generation) != self._generation
        if stale or time.monotonic() - info.get("svc_opened", time.monotonic()) > SQLITE_RECYCLE:
            try:
                dbapi_connection.close()  # the driver's close, awaited here (cancelled: ends as it can)
            except Exception:  # noqa: BLE001 - it is being replaced anyway
                log.warning("closing a replaced SQLite connection failed", exc_info=True)
            finally:
                record.close()  # the entry lets it go (a closed aiosqlite connection closes at once)
            raise DisconnectionError("reopened for fresh planner statistics")  # the pool opens another

    async def dispose(self) -> None:
        await self.engine.dispose()
        if self._file_lock is not None:
            self._file_lock.close()
