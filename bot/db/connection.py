"""The one SQLite database shared by the bus and the store, on aiosqlite.

One aiosqlite connection per database file per process. A statement on its own is atomic::

    await db.execute("UPDATE ...", params)
    rows = await db.fetchall("SELECT ...", params)

A unit of work of several statements is one transaction of awaited statements, ``BEGIN
IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` when the block raises, and then the caller gets the
exception. Nothing runs twice: each statement the block awaits runs once, in that transaction::

    async with db.transaction() as tx:
        row = await tx.fetchone("SELECT ...")
        await tx.execute("UPDATE ...")

There is one connection, so a transaction is everything the connection runs between its ``BEGIN``
and its ``COMMIT``: transactions take turns (an ``asyncio.Lock``), and while one is open every
other task's statements wait for its end instead of running inside it. Within the task that opened
it a transaction is re-entrant: :meth:`Database.execute` (and the other statement methods) and a
nested :meth:`Database.transaction` join it, so bus and store methods compose into one unit::

    async with db.transaction():
        await store.append_turn(...)
        await bus.ack(delivery.id)

Outside a transaction a statement takes no lock: it goes straight to aiosqlite's queue, so many
tasks' statements reach the connection's thread back to back, in the order they were issued, each
committed on its own (autocommit).

Writes that do not need each other's answers are sent together, in a transaction or not::

    async with db.transaction() as tx:
        await tx.gather(store.finish_run(...), bus.ack(delivery.id))

Each awaited statement is a trip to aiosqlite's thread, which has to be woken when it sleeps; a wake-up
of a thread on another core costs more than most statements (``bench/turns.py`` times one). Sent
together, the statements reach the thread back to back and wake it once.

The schema is brought up to date (:mod:`bot.db.migrations`) on a plain ``sqlite3`` connection in a thread,
before the aiosqlite connection opens: migrations are plain functions of a ``sqlite3.Connection``,
and aiosqlite runs only what it is handed statement by statement. Other processes (a second
``vaultbot`` command, a crashed worker's successor) share the file through WAL and
``busy_timeout``. SQLite's own automatic checkpoint keeps the write-ahead log short.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager, closing
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from bot.db.migrations import migrate
from bot.private_files import create_private_file, make_private_folder, tighten

__all__ = ["BUSY_TIMEOUT_MS", "WAL_FILES", "Database", "Params", "Row", "Tx"]

T = TypeVar("T")
Params = Sequence[Any] | Mapping[str, Any]
Row = sqlite3.Row

BUSY_TIMEOUT_MS = 5000
# The files SQLite keeps beside a database in WAL mode.
WAL_FILES = ("-wal", "-shm")

# Set on the connection (WAL is set on the file when it opens): the busy timeout lets writers of other
# processes take turns; NORMAL is durable across a crash of the process (not of the machine) without
# an fsync per commit; foreign keys are checked.
_PRAGMAS = (f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}", "PRAGMA synchronous = NORMAL", "PRAGMA foreign_keys = ON")

# The transaction the current task is inside, if any. Child tasks inherit a copy of the context,
# so the Tx also remembers its task: a task spawned inside a transaction must not write through it.
_current: ContextVar[Tx | None] = ContextVar("vaultbot_db_tx", default=None)


class Tx:
    """An open transaction. Obtain one from :meth:`Database.transaction`; it is usable only inside
    that block, from the task that opened it."""

    def __init__(self, db: Database, conn: aiosqlite.Connection) -> None:
        self._db = db
        self._conn = conn
        # The task that opened it, and the tasks it runs statements in together (gather).
        self._tasks = {asyncio.current_task()}
        self._open = True
        self._after_commit: list[Callable[[], None]] = []

    def _belongs_to(self, db: Database) -> bool:
        return self._open and self._db is db and asyncio.current_task() in self._tasks

    async def gather(self, *writes: Awaitable[T]) -> list[T]:
        """Await ``writes`` (coroutines of statements that do not depend on each other) together, in
        this transaction. Their first statements reach the connection's thread back to back, in the
        order given, and are answered in one wake-up of each thread instead of one each.

        Returns their results in order. When any raises, the first error is raised once all have
        ended, so the transaction's block rolls back with nothing of it still running."""
        self._check()
        tasks = [asyncio.ensure_future(write) for write in writes]
        self._tasks.update(tasks)
        try:
            results = await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            self._tasks.difference_update(tasks)
        return _results(results)

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement; returns the number of rows it changed (``rowcount``).

        For an id of an inserted row use ``INSERT … RETURNING id`` with :meth:`fetchone`.
        """
        self._check()
        cursor = await self._conn.execute(sql, params)
        return cursor.rowcount

    async def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        """Run one statement once per parameter set in ``rows``, in one round trip; returns the
        number of rows changed in all."""
        self._check()
        cursor = await self._conn.executemany(sql, rows)
        return cursor.rowcount

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Run one statement (a query or a write with ``RETURNING``) and return its rows."""
        self._check()
        return list(await self._conn.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """The first row of :meth:`fetchall`, or None."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    def _check(self) -> None:
        # Once the block is over, a statement through it would run outside any transaction.
        if not self._open:
            raise RuntimeError("The transaction is over: run statements inside its block.")


class Database:
    """The SQLite file. Open with :meth:`open`; always :meth:`close` (an aiosqlite connection left
    open keeps the process from exiting)."""

    def __init__(self, path: Path, conn: aiosqlite.Connection) -> None:
        self.path = path
        self._conn = conn
        self._lock = asyncio.Lock()
        # Set while no transaction is open: statements waiting for one to end all go at once.
        self._no_transaction = asyncio.Event()
        self._no_transaction.set()
        self._closed = False

    @classmethod
    async def open(cls, path: Path) -> Database:
        """Open (creating parents and the file if needed) and migrate the database at ``path``."""
        path = Path(path)
        await asyncio.to_thread(_prepare, path)
        conn = await aiosqlite.connect(path, isolation_level=None)
        try:
            conn.row_factory = sqlite3.Row
            for pragma in _PRAGMAS:
                await conn.execute(pragma)
        except BaseException:
            await conn.close()
            raise
        return cls(path, conn)

    async def close(self) -> None:
        """Close the connection, after any transaction in progress; later statements are refused.
        The last connection to the file to close folds the write-ahead log back into it."""
        async with self._lock:
            if self._closed:
                return
            self._closed = True
            await self._conn.close()

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
            self._refuse_if_closed()
            self._no_transaction.clear()
            tx = Tx(self, self._conn)
            token = _current.set(tx)
            try:
                await self._conn.execute("BEGIN IMMEDIATE")
                yield tx
            except BaseException:
                # Queued behind everything this transaction queued, so it runs even if this await
                # is cancelled, and before any other task's statement (they wait for the flag).
                await self._conn.rollback()
                raise
            else:
                await self._commit()
            finally:
                tx._open = False
                _current.reset(token)
                self._no_transaction.set()
            for callback in tx._after_commit:
                callback()

    async def execute(self, sql: str, params: Params = ()) -> int:
        """Run one statement, atomic on its own, or as part of this task's transaction if there is
        one; returns the number of rows it changed."""
        tx = self._active()
        if tx is not None:
            return await tx.execute(sql, params)
        await self._outside_transactions()
        cursor = await self._conn.execute(sql, params)
        return cursor.rowcount

    async def executemany(self, sql: str, rows: Iterable[Params]) -> int:
        """Run one statement once per parameter set in ``rows``, all or nothing: in this task's
        transaction if there is one, else in a transaction of its own."""
        async with self.transaction() as tx:
            return await tx.executemany(sql, rows)

    async def fetchall(self, sql: str, params: Params = ()) -> list[Row]:
        """Rows of one statement (a query, or a write with ``RETURNING``), like :meth:`execute`."""
        tx = self._active()
        if tx is not None:
            return await tx.fetchall(sql, params)
        await self._outside_transactions()
        return list(await self._conn.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Params = ()) -> Row | None:
        """The first row of :meth:`fetchall`, or None."""
        rows = await self.fetchall(sql, params)
        return rows[0] if rows else None

    async def gather(self, *writes: Awaitable[T]) -> list[T]:
        """Await ``writes`` (coroutines of statements that do not depend on each other) together: in
        this task's transaction if there is one (:meth:`Tx.gather`), else each statement atomic on
        its own. Sent back to back, they cost the connection's thread one wake-up, not one each: a
        wake-up of another thread costs more than most statements.

        Returns their results in order; when any raises, the first error, once all have ended."""
        tx = self._active()
        if tx is not None:
            return await tx.gather(*writes)
        return _results(await asyncio.gather(*writes, return_exceptions=True))

    def after_commit(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once what this task has written is committed: at once outside a
        transaction, else when its transaction commits (never, if it rolls back).

        For telling others a change is there to see (waking a worker): told inside the
        transaction, they would wait for its end anyway, and find nothing if it rolled back.
        """
        tx = self._active()
        if tx is None:
            callback()
        else:
            tx._after_commit.append(callback)

    def _active(self) -> Tx | None:
        tx = _current.get()
        return tx if tx is not None and tx._belongs_to(self) else None

    async def _outside_transactions(self) -> None:
        # Returns with no transaction open. The caller then queues its statement without awaiting
        # in between, so it reaches the connection's thread ahead of any later transaction's BEGIN.
        while not self._no_transaction.is_set():
            await self._no_transaction.wait()
        self._refuse_if_closed()

    def _refuse_if_closed(self) -> None:
        if self._closed:
            raise RuntimeError("The database is closed.")

    async def _commit(self) -> None:
        try:
            await self._conn.execute("COMMIT")
        except BaseException:
            # A failed COMMIT (a full disk, an I/O error, a deferred constraint) may leave the
            # transaction open, and then every later BEGIN on this connection would fail.
            await self._conn.rollback()
            raise


def _results(results: list[T | BaseException]) -> list[T]:
    """The results of a gather with ``return_exceptions``, or its first error."""
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return results  # type: ignore[return-value]  # no error among them


def _prepare(path: Path) -> None:
    """Create the file if needed, its owner's only, switch it to WAL and bring its schema up to
    date, on a connection of its own (blocking: runs in a thread).

    SQLite gives the ``-wal`` and ``-shm`` files it creates the database file's own mode; ones left
    from before are tightened here too."""
    make_private_folder(path.parent)
    if not path.is_dir():  # a folder is refused by SQLite, in words the caller turns into a reason
        create_private_file(path)
        for suffix in WAL_FILES:
            tighten(path.with_name(path.name + suffix))
    with closing(sqlite3.connect(path, isolation_level=None)) as conn:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        # WAL is a property of the file; set it before anyone else uses it.
        conn.execute("PRAGMA journal_mode = WAL")
        migrate(conn)
