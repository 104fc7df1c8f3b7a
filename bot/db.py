"""The one SQLite database shared by the bus and the store.

One aiosqlite connection per process, in autocommit mode. :meth:`Database.transaction` runs
``BEGIN IMMEDIATE … COMMIT`` under an ``asyncio.Lock``. A transaction is re-entrant within the task
that opened it, and the one-statement helpers (:meth:`Database.execute`, :meth:`Database.fetchall`)
join it, so bus and store methods compose into one atomic unit::

    async with db.transaction():
        await store.append_turn(...)
        await bus.ack(delivery.id)

Outside a transaction a one-statement helper does not take the lock: it waits only while another
task's transaction is open, then hands its statement straight to the connection's thread. That
thread runs requests in order, so the statement runs before any later ``BEGIN`` (in autocommit, on
its own), and many tasks' statements run back to back instead of one per trip through the event
loop, which is what let a busy loop serialise every conversation's turn behind the others.

Other processes (a second ``vaultbot`` command, a crashed worker's successor) share the file
through WAL and ``busy_timeout``.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiosqlite

from bot.migrations import migrate

__all__ = ["Database", "Tx", "now_iso", "to_iso"]

Params = Iterable[Any] | dict[str, Any]

_BUSY_TIMEOUT_MS = 5000

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
    """The current time as stored: ISO 8601 UTC text."""
    return to_iso(datetime.now(UTC))


class Tx:
    """An open transaction. Obtain one from :meth:`Database.transaction`."""

    def __init__(self, db: Database, conn: aiosqlite.Connection) -> None:
        self._db = db
        self._conn = conn
        self._task = asyncio.current_task()

    def _belongs_to(self, db: Database) -> bool:
        return self._db is db and self._task is asyncio.current_task()

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; returns the number of rows it changed (``rowcount``).

        For an id of an inserted row use ``INSERT … RETURNING id`` with :meth:`fetchone`.
        """
        cursor = await self._conn.execute(sql, params)
        return cursor.rowcount

    async def fetchall(self, sql: str, params: Params = ()) -> list[aiosqlite.Row]:
        """Run one statement (a query or a write with ``RETURNING``) and return its rows."""
        return list(await self._conn.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> aiosqlite.Row | None:
        """The first row of :meth:`fetchall`, or None."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None


class Database:
    """The SQLite file. Open with :meth:`open`; always :meth:`close` (aiosqlite hangs otherwise)."""

    def __init__(self, path: Path, conn: aiosqlite.Connection) -> None:
        self.path = path
        self._conn = conn
        self._lock = asyncio.Lock()
        # Set while no transaction is open: statements waiting for one to end all go at once.
        self._no_transaction = asyncio.Event()
        self._no_transaction.set()

    @classmethod
    async def open(cls, path: Path) -> Database:
        """Open (creating parents and the file if needed) and migrate the database at ``path``."""
        path = Path(path)
        await asyncio.to_thread(_prepare, path)
        conn = await aiosqlite.connect(path, isolation_level=None)
        try:
            conn.row_factory = aiosqlite.Row
            for pragma in (
                "PRAGMA journal_mode=WAL",
                "PRAGMA synchronous=NORMAL",
                f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}",
                "PRAGMA foreign_keys=ON",
            ):
                await conn.execute(pragma)
        except BaseException:
            await conn.close()
            raise
        return cls(path, conn)

    async def close(self) -> None:
        """Close the connection, after any transaction in progress."""
        async with self._lock:
            await self._conn.close()

    def _active(self) -> Tx | None:
        tx = _current.get()
        return tx if tx is not None and tx._belongs_to(self) else None

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
            try:
                await self._conn.execute("BEGIN IMMEDIATE")
            except BaseException:
                self._no_transaction.set()
                raise
            tx = Tx(self, self._conn)
            token = _current.set(tx)
            try:
                yield tx
            except BaseException:
                # aiosqlite runs requests in order on its thread, so even if this await is
                # cancelled the ROLLBACK runs before anything queued after it. SQLite may already
                # have rolled back on its own (a full disk), hence the check.
                if self._conn.in_transaction:
                    await self._conn.execute("ROLLBACK")
                raise
            else:
                await self._conn.execute("COMMIT")
            finally:
                _current.reset(token)
                self._no_transaction.set()

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement, atomic on its own, or as part of this task's transaction if there is
        one; returns the number of rows it changed.

        One statement needs no ``BEGIN … COMMIT`` round trips, which matters on the hot path.
        """
        tx = self._active()
        if tx is not None:
            return await tx.execute(sql, params)
        await self._outside_transactions()
        cursor = await self._conn.execute(sql, params)
        return cursor.rowcount

    async def fetchall(self, sql: str, params: Params = ()) -> list[aiosqlite.Row]:
        """Rows of one statement (a query, or a write with ``RETURNING``), like :meth:`execute`."""
        tx = self._active()
        if tx is not None:
            return await tx.fetchall(sql, params)
        await self._outside_transactions()
        return list(await self._conn.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> aiosqlite.Row | None:
        """The first row of :meth:`fetchall`, or None."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def _outside_transactions(self) -> None:
        # Returns with no transaction open. The caller then queues its statement without awaiting
        # in between, so it reaches the connection's thread ahead of any later transaction's BEGIN.
        while not self._no_transaction.is_set():
            await self._no_transaction.wait()


def _prepare(path: Path) -> None:
    """Create the file and bring its schema up to date (blocking; run in a thread)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        # WAL is a property of the file; set it before anyone else uses it.
        conn.execute("PRAGMA journal_mode=WAL")
        migrate(conn)
    finally:
        conn.close()
