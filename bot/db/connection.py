"""The one SQLite database shared by the bus and the store.

One ``sqlite3`` connection per process, in autocommit mode, used only from one dedicated thread:
every call hands a function to that thread and awaits its result. A round trip costs a
cross-thread hand-off and an event-loop wake-up, far more than the statement itself on the hot
path, so a unit of work that needs several statements (read-then-write, a turn's finishing
writes) is one function run there by :meth:`Database.run`, atomically, in one round trip::

    def finish(conn: sqlite3.Connection) -> None:
        conn.execute(...)
        conn.execute(...)

    await db.run(finish)

:meth:`Database.transaction` keeps a ``BEGIN IMMEDIATE … COMMIT`` open across awaits, under an
``asyncio.Lock``, for units that must await something else in between. It is re-entrant within the
task that opened it, and :meth:`Database.run` and the one-statement helpers
(:meth:`Database.execute`, :meth:`Database.fetchall`) join it, so bus and store methods compose
into one atomic unit::

    async with db.transaction():
        await store.append_turn(...)
        await bus.ack(delivery.id)

Outside a transaction a call does not take the lock: it waits only while another task's
transaction is open, then hands its function straight to the thread. That thread runs requests
in order, so the call runs before any later ``BEGIN``, and many tasks' calls run back to back
instead of one per trip through the event loop.

Group commit. A ``COMMIT`` writes every page the transaction dirtied to the WAL, and on the hot
path it is most of what the database thread does. So the atomic units that reach the thread back
to back — :meth:`Database.run` units, single ``SELECT``/``INSERT``/``UPDATE``/``DELETE``
statements and :meth:`Database.record` writes, all outside a transaction, from many conversations
— share one ``BEGIN IMMEDIATE … COMMIT`` (see :func:`_run_group`):

- a unit that raises leaves nothing behind, its caller gets its exception, and the others still
  commit: the transaction is rolled back and run again without it (units fail rarely, and a
  ``SAVEPOINT`` around each would cost every unit two more statements on the hot path);
- no caller hears back before the ``COMMIT`` succeeded, so nobody sees success for a write that is
  not on disk;
- if the transaction fails as a whole (its ``COMMIT`` fails, or SQLite rolls it back by itself on
  a full disk or an I/O error), every unit runs again alone, so only the unit that really fails
  fails, with the same ``sqlite3`` error it would have met alone;
- if ``BEGIN IMMEDIATE`` waits out the busy timeout (another process holds the write lock), every
  write of the group fails with "database is locked", as each alone would have; reads run anyway.

Anything else — a transaction's statements, its ``COMMIT``, a ``PRAGMA`` — runs alone and ends
the group: the group commits first, so the order of calls is still exactly the order they were
queued in, and a transaction never shares anything with another unit.

Other processes (a second ``vaultbot`` command, a crashed worker's successor) share the file
through WAL and ``busy_timeout``.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import sqlite3
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from bot.db.checkpoint import Checkpointer
from bot.db.thread import Call, DatabaseThread, Outcome, outcome_of
from bot.migrations import migrate

__all__ = ["Database", "Row", "Tx", "now_iso", "to_iso"]

Params = Sequence[Any] | Mapping[str, Any]
Row = sqlite3.Row
T = TypeVar("T")

_BUSY_TIMEOUT_MS = 5000
# The log's size (4 KB pages) at which the database thread checkpoints by itself: ~16 MB.
_BACKSTOP_PAGES = 4000
# How long a recorded write (record()) may wait for the next awaited call, to share its commit.
_RECORD_HOLD = 0.01

# Single statements that write rows: units that may share a transaction (see _statement).
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")

# The transaction the current task is inside, if any. Child tasks inherit a copy of the context,
# so the Tx also remembers its task: a task spawned inside a transaction must not write through it.
_current: ContextVar[Tx | None] = ContextVar("vaultbot_db_tx", default=None)


def to_iso(moment: datetime) -> str:
    """``moment`` as ISO 8601 UTC text, the one format stored (naive datetimes are taken as UTC).

    One fixed format keeps text comparison equal to time comparison in SQL.
    """
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def now_iso() -> str:
    """The current time as stored: ISO 8601 UTC text (what :func:`to_iso` gives, without its checks)."""
    return datetime.now(UTC).isoformat(timespec="microseconds")


class Tx:
    """An open transaction. Obtain one from :meth:`Database.transaction`."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._task = asyncio.current_task()
        # BEGIN goes to the database thread with the first statement, saving it a round trip.
        self.begun = False

    def _belongs_to(self, db: Database) -> bool:
        return self._db is db and self._task is asyncio.current_task()

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; returns the number of rows it changed (``rowcount``).

        For an id of an inserted row use ``INSERT … RETURNING id`` with :meth:`fetchone`.
        """
        return await self.call(_rowcount, sql, params)

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one statement (a query or a write with ``RETURNING``) and return its rows."""
        return await self.call(_rows, sql, params)

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """The first row of :meth:`fetchall`, or None."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` on the database thread, inside this transaction."""
        if self.begun:
            return await self._db._call(fn, *args)
        self.begun = True
        return await self._db._call(_begin_then, fn, *args)


class Database:
    """The SQLite file. Open with :meth:`open`; always :meth:`close`."""

    def __init__(self, path: Path, conn: sqlite3.Connection, thread: DatabaseThread) -> None:
        self.path = path
        self._conn = conn
        self._thread = thread
        self._checkpointer = Checkpointer(path)
        thread.after_batch = self._checkpointer.used
        self._lock = asyncio.Lock()
        # Set while no transaction is open: calls waiting for one to end all go at once.
        self._no_transaction = asyncio.Event()
        self._no_transaction.set()

    @classmethod
    async def open(cls, path: Path) -> Database:
        """Open (creating parents and the file if needed) and migrate the database at ``path``."""
        path = Path(path)
        thread = DatabaseThread("vaultbot-db", hold=_RECORD_HOLD)
        try:
            conn = await thread.submit(_connect, path)
        except BaseException:
            thread.stop()
            raise
        thread.run_group = functools.partial(_run_group, conn)
        return cls(path, conn, thread)

    async def close(self) -> None:
        """Close the connection, after any transaction in progress."""
        async with self._lock:
            # Its connection first, so the database thread's is the last: that close checkpoints
            # the whole log and removes it.
            await asyncio.to_thread(self._checkpointer.stop)
            await self._call(sqlite3.Connection.close)
            self._thread.stop()

    def _active(self) -> Tx | None:
        tx = _current.get()
        return tx if tx is not None and tx._belongs_to(self) else None

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(connection, *args)`` on the database thread."""
        return await self._thread.submit(fn, self._conn, *args)

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)`` on the database thread, atomically, in one round trip: inside this
        task's transaction if there is one, else in its own ``BEGIN IMMEDIATE … COMMIT``.

        Outside a transaction it may share its ``BEGIN … COMMIT`` with the units queued next to it
        (see the module docstring), and if that group's commit fails it runs again alone: ``fn``
        must act only through the connection it is given, and must not keep it.
        """
        tx = self._active()
        if tx is not None:
            return await tx.call(fn)
        await self._outside_transactions()
        return await self._thread.unit(fn, self._conn)

    async def record(self, fn: Callable[[sqlite3.Connection], object]) -> None:
        """Queue an append-only write that nobody waits for, such as a step of the audit trail:
        ``fn(connection)`` runs atomically, after everything queued before it and before anything
        queued after it, so it is on disk before any later write this process awaits (an ack, a
        reply). It costs the caller no round trip, and it waits up to ``_RECORD_HOLD`` for the next
        write to share its commit (a turn's steps would otherwise each commit alone, between the
        turn's own writes): what is not yet committed when the process dies is lost, as a write
        queued a moment later would have been. A failure is logged, not raised: recording what
        happened must not fail what happened. Inside this task's transaction it is part of it.
        """
        tx = self._active()
        if tx is not None:
            await tx.call(fn)
            return
        await self._outside_transactions()
        self._thread.post(fn, self._conn)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Tx]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` if the block raises.

        Inside a transaction of the same task this yields the outer ``Tx``: the inner block joins
        the outer unit and commits or rolls back with it.
        """
        outer = self._active()
        if outer is not None:
            yield outer
            return
        async with self._lock:
            self._no_transaction.clear()
            tx = Tx(self)
            token = _current.set(tx)
            try:
                yield tx
            except BaseException:
                # The thread runs requests in order, so even if this await is cancelled the
                # ROLLBACK runs before anything queued after it.
                if tx.begun:
                    await self._call(_rollback)
                raise
            else:
                if tx.begun:
                    await self._call(_commit)
            finally:
                _current.reset(token)
                self._no_transaction.set()

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement, atomic on its own, or as part of this task's transaction if there is
        one; returns the number of rows it changed.

        One statement needs no ``BEGIN … COMMIT``, which matters on the hot path.
        """
        return await self._statement(_rowcount, sql, params)

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Rows of one statement (a query, or a write with ``RETURNING``), like :meth:`execute`."""
        return await self._statement(_rows, sql, params)

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """The first row of :meth:`fetchall`, or None."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def _statement(self, fn: Callable[[sqlite3.Connection, str, Params], T], sql: str, params: Params) -> T:
        tx = self._active()
        if tx is not None:
            return await tx.call(fn, sql, params)
        await self._outside_transactions()
        verb = sql.lstrip()[:7].upper()
        if verb.startswith("SELECT"):
            return await self._thread.unit(_read, self._conn, fn, sql, params)
        if verb.startswith(_WRITES):
            return await self._thread.unit(fn, self._conn, sql, params)
        # Anything else (a PRAGMA, a schema change, VACUUM) may not work inside a transaction.
        return await self._call(fn, sql, params)

    async def _outside_transactions(self) -> None:
        # Returns with no transaction open. The caller then queues its call without awaiting in
        # between, so it reaches the database thread ahead of any later transaction's BEGIN.
        while not self._no_transaction.is_set():
            await self._no_transaction.wait()


# These run on the database thread.


def _rowcount(conn: sqlite3.Connection, sql: str, params: Params) -> int:
    return conn.execute(sql, params).rowcount


def _rows(conn: sqlite3.Connection, sql: str, params: Params) -> list[Row]:
    return conn.execute(sql, params).fetchall()


def _rollback(conn: sqlite3.Connection) -> None:
    # SQLite may already have rolled back on its own (a full disk), hence the check.
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def _begin_then(conn: sqlite3.Connection, fn: Callable[..., T], *args: Any) -> T:
    conn.execute("BEGIN IMMEDIATE")
    return fn(conn, *args)


def _commit(conn: sqlite3.Connection) -> None:
    try:
        conn.execute("COMMIT")
    except BaseException:
        # A failed COMMIT (a full disk, an I/O error, a deferred constraint) may leave the
        # transaction open, and then every later BEGIN on this connection would fail.
        _rollback(conn)
        raise


def _read(conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection, str, Params], T], sql: str, params: Params) -> T:
    """A single read statement as a unit: marked, because alone it takes no write lock (WAL)."""
    return fn(conn, sql, params)


# Units that are one statement: atomic on their own, no BEGIN … COMMIT needed when they run alone.
_STATEMENTS = frozenset({_rowcount, _rows, _read})


def _run_group(conn: sqlite3.Connection, calls: list[Call]) -> list[Outcome]:
    """Units that came back to back (many conversations' writes), in one transaction: one commit,
    and the pages they share written to the WAL once. A unit that raises is left out (see
    :func:`_together`) and its caller gets its exception. If the transaction fails as a whole (its
    COMMIT, or SQLite rolling it back on its own), every unit runs again alone, so only the one
    that really fails fails. The outcomes are returned only once what they report is committed."""
    if sum(fn is not _read for fn, _ in calls) > 1:
        outcomes = _together(conn, calls)
        if outcomes is not None:
            return outcomes
    return [_alone(conn, call) for call in calls]


def _together(conn: sqlite3.Connection, calls: list[Call]) -> list[Outcome] | None:
    """The units in one transaction; None if it failed as a whole and was rolled back.

    A unit that raises may have written half of what it meant to. Rather than a savepoint around
    every unit, the transaction is then rolled back and run again from the start without it: the
    units before it do the same again, and those after it see what they would have seen with the
    failed one rolled back alone."""
    failed: dict[int, Outcome] = {}
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            return [failed.get(index) or _locked(conn, call, error) for index, call in enumerate(calls)]
        try:
            outcomes = _attempt(conn, calls, failed)
            if outcomes is not None:
                conn.execute("COMMIT")
                return outcomes
        except BaseException as exc:
            _rollback(conn)
            if isinstance(exc, sqlite3.Error):  # a failed COMMIT: each runs again alone
                return None
            raise
        if not conn.in_transaction:  # SQLite rolled it all back itself (a full disk, an I/O error)
            return None
        conn.execute("ROLLBACK")


def _locked(conn: sqlite3.Connection, call: Call, error: sqlite3.Error) -> Outcome:
    # Locked past the busy timeout (another process is writing): each write alone would wait as
    # long and fail the same way. A read needs no lock.
    return _alone(conn, call) if call[0] is _read else (None, copy.copy(error))


def _attempt(conn: sqlite3.Connection, calls: list[Call], failed: dict[int, Outcome]) -> list[Outcome] | None:
    """The units in the open transaction, but for those that ``failed`` before; None when one
    fails now (added to ``failed``) or SQLite rolled the transaction back by itself."""
    outcomes = []
    for index, call in enumerate(calls):
        if index in failed:
            outcomes.append(failed[index])
            continue
        outcome = outcome_of(*call)
        if not conn.in_transaction:
            return None
        if outcome[1] is not None and call[0] is not _read:  # a read changes nothing to take back
            failed[index] = outcome
            return None
        outcomes.append(outcome)
    return outcomes


def _alone(conn: sqlite3.Connection, call: Call) -> Outcome:
    fn, args = call
    if fn in _STATEMENTS:
        return outcome_of(fn, args)
    return outcome_of(_atomically, (conn, call))


def _atomically(conn: sqlite3.Connection, call: Call) -> object:
    fn, args = call
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(*args)
    except BaseException:
        _rollback(conn)
        raise
    _commit(conn)
    return result


def _connect(path: Path) -> sqlite3.Connection:
    """Create the file if needed, bring its schema up to date and open the connection the
    database thread keeps (blocking; runs on that thread)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        # WAL is a property of the file; set it before anyone else uses it.
        conn.execute("PRAGMA journal_mode=WAL")
        migrate(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
        # Checkpoints run on a thread of their own (bot/db/checkpoint.py); this connection's
        # automatic one is only the backstop that lets a constantly written log start over.
        conn.execute(f"PRAGMA wal_autocheckpoint={_BACKSTOP_PAGES}")
        conn.execute("PRAGMA foreign_keys=ON")
        conn.row_factory = sqlite3.Row
    except BaseException:
        conn.close()
        raise
    return conn
