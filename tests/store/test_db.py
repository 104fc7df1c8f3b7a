"""The shared database: statements from many tasks run side by side, never inside another task's transaction, and
atomic units that reach the database thread together share one commit without sharing their failures."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from bot.db import Database
from bot.db import is_transient
from tests.helpers import WriteLock


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


# Group commit: atomic units that reach the database thread together share one transaction.


def on_disk(db: Database) -> list[str]:
    """The notes another process reading the file sees: only what is committed."""
    other = sqlite3.connect(db.path)
    try:
        return [row[0] for row in other.execute("SELECT text FROM notes ORDER BY rowid")]
    finally:
        other.close()


def insert_then_fail(text: str, error: BaseException) -> Callable[[sqlite3.Connection], object]:
    def unit(conn: sqlite3.Connection) -> None:
        conn.execute("INSERT INTO notes VALUES (?)", (text,))
        raise error

    return unit


async def test_units_queued_together_share_one_commit_and_a_failing_one_is_rolled_back_alone(db: Database) -> None:
    statements: list[str] = []
    await db.run(lambda conn: conn.set_trace_callback(statements.append))
    statements.clear()
    units = [insert("a"), insert("b"), insert_then_fail("half", ValueError("this unit fails")), insert("c")]
    # Started in one pass of the event loop, as many conversations' writes are.
    outcomes = await asyncio.gather(*(db.run(unit) for unit in units), return_exceptions=True)

    assert [type(outcome) for outcome in outcomes] == [sqlite3.Cursor, sqlite3.Cursor, ValueError, sqlite3.Cursor]
    assert str(outcomes[2]) == "this unit fails"
    assert on_disk(db) == ["a", "b", "c"]
    assert statements.count("COMMIT") == 1


async def test_a_unit_that_fills_the_disk_fails_alone_and_the_rest_of_its_group_is_still_written(db: Database) -> None:
    await db.execute("INSERT INTO notes VALUES ('before')")
    # The disk is full: SQLite may not grow the file by a page, and a long note needs several.
    [(pages,)] = await db.fetchall("PRAGMA page_count")
    await db.fetchall(f"PRAGMA max_page_count = {pages}")
    units = [insert("a"), insert("long " * 20_000), insert("b"), insert("c")]
    outcomes = await asyncio.gather(*(db.run(unit) for unit in units), return_exceptions=True)

    full = outcomes[1]
    assert isinstance(full, sqlite3.OperationalError) and "full" in str(full)
    assert is_transient(full)  # what the workers ride out
    assert not any(isinstance(outcome, BaseException) for outcome in outcomes[:1] + outcomes[2:])
    assert on_disk(db) == ["before", "a", "b", "c"]


async def test_when_the_groups_commit_fails_each_unit_runs_again_alone_and_only_the_faulty_one_fails(
    db: Database,
) -> None:
    await db.execute("CREATE TABLE parents (id INTEGER PRIMARY KEY)")
    await db.execute("CREATE TABLE children (parent INTEGER REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)")
    # A deferred constraint is checked at COMMIT: the one shared by the group fails for all of them.
    units = [insert("a"), lambda conn: conn.execute("INSERT INTO children VALUES (7)"), insert("b")]
    outcomes = await asyncio.gather(*(db.run(unit) for unit in units), return_exceptions=True)

    assert isinstance(outcomes[1], sqlite3.IntegrityError)
    assert not isinstance(outcomes[0], BaseException) and not isinstance(outcomes[2], BaseException)
    assert on_disk(db) == ["a", "b"]
    assert await db.fetchall("SELECT * FROM children") == []


async def test_no_caller_hears_back_before_the_commit_of_its_group(db: Database) -> None:
    ticks = 0

    async def tick() -> None:  # counts passes of the event loop while the database thread works
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    def slow(conn: sqlite3.Connection) -> None:
        # Runs after the first unit in the same group, and gives the event loop time to hand
        # that unit's result back if it were ever handed back early.
        start, deadline = ticks, time.monotonic() + 5
        while ticks < start + 50 and time.monotonic() < deadline:
            time.sleep(0.001)
        conn.execute("INSERT INTO notes VALUES ('slow')")

    async def first() -> list[str]:
        await db.run(insert("first"))
        return on_disk(db)  # at once, before anything else runs on the loop

    ticker = asyncio.create_task(tick())
    try:
        seen, _ = await asyncio.gather(first(), db.run(slow))
    finally:
        ticker.cancel()
    assert seen == ["first", "slow"]
    assert ticks > 50  # the loop did run meanwhile


async def test_another_process_holding_the_lock_fails_every_write_of_the_group_as_each_alone_would(
    db: Database,
) -> None:
    await db.execute("INSERT INTO notes VALUES ('before')")
    await db.fetchall("PRAGMA busy_timeout = 20")  # the 5 s default, scaled down
    lock = WriteLock(db.path)
    try:
        outcomes = await asyncio.gather(
            db.run(insert("a")),
            db.fetchall("SELECT text FROM notes"),
            db.execute("INSERT INTO notes VALUES ('b')"),
            return_exceptions=True,
        )
    finally:
        lock.release()
    for failed in (outcomes[0], outcomes[2]):
        assert isinstance(failed, sqlite3.OperationalError) and "locked" in str(failed) and is_transient(failed)
    assert [row["text"] for row in outcomes[1]] == ["before"]  # a read takes no lock (WAL)
    assert outcomes[0] is not outcomes[2]  # each caller its own error, with its own traceback
    await db.execute("INSERT INTO notes VALUES ('after')")
    assert on_disk(db) == ["before", "after"]


@pytest.mark.parametrize("fails", [False, True], ids=["commits", "rolls back"])
async def test_a_transaction_is_never_merged_with_the_units_queued_around_it(db: Database, fails: bool) -> None:
    inside = asyncio.Event()
    release = asyncio.Event()
    seen_meanwhile: list[str] = []

    async def transaction() -> None:
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO notes VALUES ('tx 1')")
            inside.set()
            await release.wait()
            await tx.execute("INSERT INTO notes VALUES ('tx 2')")
            if fails:
                raise RuntimeError("the transaction fails")

    async def later() -> None:
        await inside.wait()
        # Queued while the transaction is open: they wait for it, then commit on their own.
        units = asyncio.gather(db.run(insert("after 1")), db.execute("INSERT INTO notes VALUES ('after 2')"))
        seen_meanwhile.extend(on_disk(db))
        release.set()
        await units

    # Queued in one pass of the event loop, the first two just before the transaction's BEGIN.
    outcomes = await asyncio.gather(
        db.run(insert("before 1")),
        db.execute("INSERT INTO notes VALUES ('before 2')"),
        transaction(),
        later(),
        return_exceptions=True,
    )
    assert [isinstance(outcome, RuntimeError) for outcome in outcomes] == [False, False, fails, False]
    assert seen_meanwhile == ["before 1", "before 2"]  # committed before the BEGIN; the transaction's rows not yet
    transaction_rows = [] if fails else ["tx 1", "tx 2"]
    assert on_disk(db) == ["before 1", "before 2", *transaction_rows, "after 1", "after 2"]


async def test_a_queued_write_waits_for_the_next_write_to_share_its_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A turn queues a step after each model or tool call, then does other work before its next
    # write: the step rides along with that write instead of paying for a commit of its own.
    monkeypatch.setattr("bot.db.connection._RECORD_HOLD", 60.0)  # however slow the machine, the next write comes first
    db = await Database.open(tmp_path / "store.db")
    try:
        await db.execute("CREATE TABLE notes (text TEXT NOT NULL)")
        statements: list[str] = []
        await db.run(lambda conn: conn.set_trace_callback(statements.append))
        statements.clear()
        await db.record(insert("step"))
        for _ in range(20):  # the turn's other work: many passes of the event loop
            await asyncio.sleep(0)
        await db.run(insert("ack"))
        assert statements.count("COMMIT") == 1
        assert on_disk(db) == ["step", "ack"]
    finally:
        await db.close()


async def test_a_queued_write_reaches_the_disk_on_its_own_when_nothing_follows(db: Database) -> None:
    await db.record(insert("step"))
    deadline = time.monotonic() + 10
    while on_disk(db) != ["step"]:
        assert time.monotonic() < deadline, "the queued write was never written"
        await asyncio.sleep(0.01)


async def test_the_log_is_folded_into_the_database_file_in_the_background_while_it_is_open(tmp_path: Path) -> None:
    # Checkpoints run on a thread of their own, not on the database thread, where each one stalled
    # every conversation's statements for tens of milliseconds: writes far below the database
    # thread's own checkpoint threshold still reach the database file while it is open.
    database = await Database.open(tmp_path / "store.db")
    try:
        await database.execute("CREATE TABLE blobs (data BLOB NOT NULL)")
        before = (tmp_path / "store.db").stat().st_size
        for _ in range(200):
            await database.execute("INSERT INTO blobs (data) VALUES (randomblob(4000))")
        deadline = time.monotonic() + 30
        while (tmp_path / "store.db").stat().st_size < before + 200 * 4000:
            assert time.monotonic() < deadline, "the write-ahead log was never checkpointed"
            await asyncio.sleep(0.01)
        assert len(await database.fetchall("SELECT rowid FROM blobs")) == 200
    finally:
        await database.close()
    assert not (tmp_path / "store.db-wal").exists()  # the last close folded in the rest
