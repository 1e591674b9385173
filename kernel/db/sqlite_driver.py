"""SQLAlchemy's aiosqlite dialect with a cursor that runs a statement in one hop to the
connection's thread.

aiosqlite runs every call of a ``sqlite3`` connection on a thread of its own, and each call
is a hop: the function queued to the thread, the thread woken, the result handed back with
``call_soon_threadsafe``, the event loop woken. SQLAlchemy's adapter cursor makes three or four
hops per statement (open a cursor, execute, fetch the rows, close the cursor), so a create of
six statements made about twenty. Under SQLite's one-writer rule each hop of a write
transaction is time the write lock is held while the loop serves other requests. This cursor
opens, runs, reads and closes the ``sqlite3`` cursor in one function on that thread: one hop
per statement. Everything else (the connection, commits, server-side cursors, errors) is
SQLAlchemy's and aiosqlite's own, except that a rollback outside a transaction (which ``sqlite3``
skips anyway) makes no hop either: a read in autocommit is one hop in all.

A connection can also be told to run inline (``set_inline``, from ``Database.begin(inline=True)``
once ``BEGIN IMMEDIATE`` has taken the write lock): its statements and its commit then run on
the event loop's own thread, with no hop at all. A write transaction holds SQLite's one write
lock from BEGIN to COMMIT, and each hop of it was a turn of the loop during which other
requests ran and every writer of every process waited; inline, the lock is held only for the
transaction's own work. Only transactions of short statements by key (an item write) ask for
it, and a window bounds it: after ``INLINE_WINDOW`` seconds without a hop, the next statement
hops, so a long batch still lets the loop serve other requests every 10 ms.

Its ``BEGIN IMMEDIATE`` runs inline too (``set_inline`` comes before the ``BEGIN``): the writer's
turn (``Database._take_turn``) already holds the file lock every svc process takes, so SQLite's
write lock is free unless something outside svc holds it (a migration, the ``sqlite3`` shell).
The ``BEGIN`` is tried with a busy timeout of zero, which never waits; when it finds the lock
taken it hops after all and waits there with the connection's own busy timeout, so the loop is
never held for another process. A hop at ``BEGIN`` was a turn of the loop, with every other
request's step in it, inside the write lock of every writer.

A connection of ``Database.read`` (autocommit reads) runs each statement inline too, within a
budget: ``READ_BUDGET`` seconds, checked by SQLite's progress handler every ``PROGRESS_STEPS``
virtual-machine steps. A read by key or a page of an index takes tens of microseconds, far less
than the hop (the thread woken, the loop woken, and the GIL handed back and forth for every row
under concurrent requests: a list of 25 cost 0.6 ms more CPU at 16 connections than at one). A
statement that outlasts the budget is interrupted and run again on the thread, so a slow query
(a scan of a million rows) costs the loop at most the budget. Only a ``SELECT`` runs this way:
a statement that writes could wait for the write lock (the busy timeout) on the loop's thread.

It reaches two attributes of aiosqlite's ``Connection`` that are not documented API,
``_execute`` (queue a function on the connection's thread and await it) and ``_conn`` (the
``sqlite3`` connection), as SQLAlchemy's own adapter does (``_tx``); both are pinned by
``tests/db/test_sqlite_driver.py``.
"""

from __future__ import annotations

import collections
import sqlite3
import time
from typing import Any

from sqlalchemy.dialects import registry
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
    SQLiteDialect_aiosqlite,
)
from sqlalchemy.util import EMPTY_DICT

DRIVER = "svc_aiosqlite"
# An inline connection runs its statements on the event loop's thread for at most this long
# (seconds) before one statement hops to its thread again and lets the loop serve others.
INLINE_WINDOW = 0.01
# A read inline gives up after this long (seconds) and runs on the connection's thread instead;
# the progress handler looks at the clock every PROGRESS_STEPS steps of SQLite's machine.
READ_BUDGET = 0.001
PROGRESS_STEPS = 10_000
# The clock of the window and the budget (seconds); tests replace it to decide whether a stretch
# or a read has run out, instead of depending on how fast the machine is.
clock = time.perf_counter
_SELECT = frozenset({"SELECT", "select"})  # the start of a statement that may run inline as a read
_BEGIN_IMMEDIATE = "BEGIN IMMEDIATE"  # kernel.db.engine._sqlite_begin's, for a write transaction


def _run(conn: sqlite3.Connection, operation: Any, parameters: Any, many: bool) -> tuple[Any, Any, int, Any]:
    """On the connection's thread: the statement's description, rows, rowcount and lastrowid."""
    cursor = conn.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        elif parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        description = cursor.description
        rows = cursor.fetchall() if description else None
        return description, rows, cursor.rowcount, cursor.lastrowid
    finally:
        cursor.close()


def _begin_now(conn: sqlite3.Connection) -> tuple[Any, Any, int, Any] | None:
    """``BEGIN IMMEDIATE`` on the calling thread if SQLite's write lock is free; None, with no
    transaction begun, when another connection holds it (the caller then hops and waits)."""
    (timeout,) = conn.execute("PRAGMA busy_timeout").fetchone()
    conn.execute("PRAGMA busy_timeout=0")
    try:
        return _run(conn, _BEGIN_IMMEDIATE, None, False)
    except sqlite3.OperationalError as error:
        if (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF == sqlite3.SQLITE_BUSY:  # or an extended BUSY_*
            return None
        raise
    finally:
        conn.execute(f"PRAGMA busy_timeout={int(timeout)}")


def _run_bounded(conn: sqlite3.Connection, operation: Any, parameters: Any) -> tuple[Any, Any, int, Any] | None:
    """``_run`` on the calling thread for at most ``READ_BUDGET``; None when it was cut short."""
    deadline = clock() + READ_BUDGET

    def over() -> bool:
        return clock() > deadline

    conn.set_progress_handler(over, PROGRESS_STEPS)
    try:
        return _run(conn, operation, parameters, False)
    except sqlite3.OperationalError as error:
        if str(error) == "interrupted" and over():
            return None
        raise
    finally:
        conn.set_progress_handler(None, PROGRESS_STEPS)


class OneHopCursor(AsyncAdapt_aiosqlite_cursor):
    """A buffered cursor whose ``execute`` is one hop to aiosqlite's thread (no aiosqlite
    ``Cursor``: the ``sqlite3`` cursor lives and dies inside the hop)."""

    __slots__ = ("_description", "_rowcount", "_lastrowid", "_arraysize")
    _awaitable_cursor_close = False

    def __init__(self, adapt_connection: Any) -> None:  # no cursor to open: no hop
        self._adapt_connection = adapt_connection
        self._connection = adapt_connection._connection
        self._cursor = None  # type: ignore[assignment]
        self._soft_closed_memoized = EMPTY_DICT
        self._rows = collections.deque()
        self._description: Any = None
        self._rowcount = -1
        self._lastrowid: Any = None
        self._arraysize = 1

    @property
    def description(self) -> Any:
        return self._description

    @property
    def rowcount(self) -> int:
        return self._rowcount

    @property
    def lastrowid(self) -> Any:
        return self._lastrowid

    @property
    def arraysize(self) -> int:
        return self._arraysize

    @arraysize.setter
    def arraysize(self, value: int) -> None:
        self._arraysize = value

    def close(self) -> None:
        self._rows.clear()

    async def _execute_async(self, operation: Any, parameters: Any) -> None:
        await self._hop(operation, parameters, False)

    async def _executemany_async(self, operation: Any, seq_of_parameters: Any) -> None:
        await self._hop(operation, seq_of_parameters, True)

    async def _hop(self, operation: Any, parameters: Any, many: bool) -> None:
        adapt = self._adapt_connection
        async with adapt._execute_mutex:
            connection = self._connection
            found = None
            if adapt.inline_now():
                if operation == _BEGIN_IMMEDIATE:
                    found = _begin_now(connection._conn)  # None: the write lock is taken, wait on the thread
                else:
                    found = _run(connection._conn, operation, parameters, many)
            elif adapt.reads_inline and not many and operation[:6] in _SELECT:
                found = _run_bounded(connection._conn, operation, parameters)
            if found is not None:
                description, rows, self._rowcount, self._lastrowid = found
            else:
                description, rows, self._rowcount, self._lastrowid = await connection._execute(
                    _run, connection._conn, operation, parameters, many)
                adapt.hopped()
            self._description = description
            self._rows = collections.deque(rows) if rows else collections.deque()


class _Connection(AsyncAdapt_aiosqlite_connection):
    __slots__ = ("_inline", "_since", "reads_inline")
    _cursor_cls = OneHopCursor

    def __init__(self, dbapi: Any, connection: Any) -> None:
        super().__init__(dbapi, connection)
        self._inline = False
        self._since = 0.0
        # Set by the engine at each use (kernel.db.engine._sqlite_begin): a Database.read
        # connection's statements run inline within READ_BUDGET (see the module's text).
        self.reads_inline = False

    def set_inline(self, inline: bool) -> None:
        """Run this connection's statements and commit on the calling (event loop's) thread,
        for stretches of at most ``INLINE_WINDOW`` between hops (see the module's text)."""
        self._inline, self._since = inline, clock()

    def inline_now(self) -> bool:
        return self._inline and clock() - self._since < INLINE_WINDOW

    def transaction_open(self) -> bool:
        """Whether the ``sqlite3`` connection is inside a transaction (it may hold SQLite's write
        lock); True for a connection closed or broken meanwhile, which its close settles."""
        try:
            return bool(self._connection.in_transaction)
        except Exception:  # noqa: BLE001 - no live connection to ask
            return True

    def hopped(self) -> None:
        if self._inline:  # the loop has run other work meanwhile: a new window starts
            self._since = clock()

    def commit(self) -> None:
        if self.inline_now() and self._connection._connection:
            try:
                self._connection._conn.commit()
            except Exception as error:  # noqa: BLE001
                self._handle_exception(error)
            return
        super().commit()

    def rollback(self) -> None:
        # SQLAlchemy rolls back every connection it closes, and sqlite3's rollback() does nothing
        # outside a transaction: a read in autocommit (Database.read) skips that hop.
        if self._connection.in_transaction:
            super().rollback()


class _Dbapi(AsyncAdapt_aiosqlite_dbapi):
    def connect(self, *arg: Any, **kw: Any) -> _Connection:
        return _Connection(self, super().connect(*arg, **kw)._connection)


class SQLiteDialect(SQLiteDialect_aiosqlite):
    driver = DRIVER
    supports_statement_cache = True

    @classmethod
    def import_dbapi(cls) -> _Dbapi:  # type: ignore[override]
        return _Dbapi(__import__("aiosqlite"), __import__("sqlite3"))


registry.register(f"sqlite.{DRIVER}", __name__, "SQLiteDialect")
