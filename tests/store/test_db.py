"""The shared database: statements from many tasks run side by side, never inside another task's transaction."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot.db import Database


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "store.db")
    await database.execute("CREATE TABLE notes (text TEXT NOT NULL)")
    yield database
    await database.close()


async def texts(db: Database) -> list[str]:
    return [row["text"] for row in await db.fetchall("SELECT text FROM notes ORDER BY rowid")]


async def test_a_statement_never_joins_another_tasks_transaction(db: Database) -> None:
    inside = asyncio.Event()
    release = asyncio.Event()

    async def failing_transaction() -> None:
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO notes VALUES ('rolled back')")
            inside.set()
            await release.wait()
            raise RuntimeError("the transaction fails")

    failing = asyncio.create_task(failing_transaction())
    await inside.wait()
    # Issued while the other task's transaction is open: it must wait for it, not ride along.
    other = asyncio.create_task(db.execute("INSERT INTO notes VALUES ('kept')"))
    await asyncio.sleep(0)
    release.set()
    with pytest.raises(RuntimeError):
        await failing
    assert await other == 1
    assert await texts(db) == ["kept"]


async def test_many_tasks_statements_all_land_in_order_per_task(db: Database) -> None:
    async def writer(name: str) -> None:
        for i in range(20):
            await db.execute("INSERT INTO notes VALUES (?)", (f"{name}{i}",))

    async def committer() -> None:
        for i in range(10):
            async with db.transaction() as tx:
                await tx.execute("INSERT INTO notes VALUES (?)", (f"tx{i}a",))
                await tx.execute("INSERT INTO notes VALUES (?)", (f"tx{i}b",))

    await asyncio.gather(*(writer(name) for name in "abcd"), committer())

    rows = await texts(db)
    assert len(rows) == 4 * 20 + 2 * 10
    for name in "abcd":
        assert [r for r in rows if r.startswith(name)] == [f"{name}{i}" for i in range(20)]
    for i in range(10):  # a transaction's statements stay together
        assert rows.index(f"tx{i}b") == rows.index(f"tx{i}a") + 1


async def test_a_queued_write_is_on_disk_before_any_later_write_returns(db: Database) -> None:
    # What the audit trail relies on: a step queued with record() is durable before the ack.
    await db.record(lambda conn: conn.execute("INSERT INTO notes VALUES ('step')"))
    await db.execute("INSERT INTO notes VALUES ('ack')")
    other = sqlite3.connect(db.path)  # another process's view of the file
    try:
        assert [row[0] for row in other.execute("SELECT text FROM notes ORDER BY rowid")] == ["step", "ack"]
    finally:
        other.close()


async def test_a_failed_queued_write_leaves_nothing_behind_and_is_logged(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    def half_then_fail(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO notes VALUES ('half')")
        raise sqlite3.OperationalError("disk I/O error")

    with caplog.at_level(logging.ERROR):
        await db.record(half_then_fail)
        await db.execute("INSERT INTO notes VALUES ('later')")
    assert await texts(db) == ["later"]
    assert "queued database write failed" in caplog.text


def insert(text: str) -> Callable[[sqlite3.Connection], object]:
    return lambda conn: conn.execute("INSERT INTO notes VALUES (?)", (text,))


async def test_writes_queued_together_share_one_commit_and_a_failing_one_loses_only_itself(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    statements: list[str] = []
    await db.run(lambda conn: conn.set_trace_callback(statements.append))
    statements.clear()
    for text in ("a", "b", "c", "d"):  # queued in one pass of the event loop, as many conversations' steps are
        await db.record(insert(text))
    await db.fetchall("SELECT 1")
    assert statements.count("COMMIT") == 1

    def half_then_fail(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO notes VALUES ('half')")
        raise sqlite3.OperationalError("disk I/O error")

    with caplog.at_level(logging.ERROR):
        for record in (insert("e"), half_then_fail, insert("f")):
            await db.record(record)
        await db.fetchall("SELECT 1")
    assert await texts(db) == ["a", "b", "c", "d", "e", "f"]
    assert caplog.text.count("queued database write failed") == 1


async def test_a_unit_of_work_is_atomic_and_a_queued_write_joins_the_open_transaction(db: Database) -> None:
    def two_then_fail(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO notes VALUES ('one')")
        conn.execute("INSERT INTO notes VALUES ('two')")
        raise ValueError("the unit fails")

    with pytest.raises(ValueError):
        await db.run(two_then_fail)
    with pytest.raises(RuntimeError):
        async with db.transaction():
            await db.record(lambda conn: conn.execute("INSERT INTO notes VALUES ('in the transaction')"))
            raise RuntimeError("the transaction fails")
    assert await texts(db) == []


async def test_a_commit_that_fails_is_rolled_back_so_the_database_stays_usable(db: Database) -> None:
    await db.execute("CREATE TABLE parents (id INTEGER PRIMARY KEY)")
    await db.execute("CREATE TABLE children (parent INTEGER REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)")
    # A deferred constraint is checked at COMMIT, which SQLite then refuses with the transaction
    # still open, as it may on a full disk or an I/O error.
    with pytest.raises(sqlite3.IntegrityError):
        await db.run(lambda conn: conn.execute("INSERT INTO children VALUES (7)"))
    await db.run(lambda conn: conn.execute("INSERT INTO notes VALUES ('after a unit of work')"))
    with pytest.raises(sqlite3.IntegrityError):
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO children VALUES (8)")
    await db.run(lambda conn: conn.execute("INSERT INTO notes VALUES ('after a transaction')"))
    assert await texts(db) == ["after a unit of work", "after a transaction"]
    assert await db.fetchall("SELECT * FROM children") == []


async def test_a_closed_database_refuses_statements_instead_of_hanging(tmp_path: Path) -> None:
    database = await Database.open(tmp_path / "closed.db")
    await database.close()
    with pytest.raises(RuntimeError, match="closed"):
        await database.execute("SELECT 1")
