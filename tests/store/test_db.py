"""The shared database, as its users rely on it: a statement is atomic on its own, a transaction is all or
nothing and its caller gets the error, nothing runs twice, another task's statements never run inside a
transaction, two processes share one file, a locked file fails writes clearly, and closing never hangs."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.db import Database, is_transient
from tests.helpers import WriteLock, subprocess_env


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "store.db")
    await database.execute("CREATE TABLE notes (text TEXT NOT NULL)")
    yield database
    await database.close()


async def texts(db: Database) -> list[str]:
    return [row["text"] for row in await db.fetchall("SELECT text FROM notes ORDER BY rowid")]


def on_disk(path: Path) -> list[str]:
    """The notes another process reading the file sees: only what is committed."""
    other = sqlite3.connect(path)
    try:
        return [row[0] for row in other.execute("SELECT text FROM notes ORDER BY rowid")]
    finally:
        other.close()


async def test_a_transaction_is_all_or_nothing_and_its_caller_gets_the_error(db: Database) -> None:
    failure = RuntimeError("the unit fails")
    with pytest.raises(RuntimeError) as raised:
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO notes VALUES ('one')")
            await tx.execute("INSERT INTO notes VALUES ('two')")
            assert on_disk(db.path) == []  # nothing is visible before the commit
            raise failure
    assert raised.value is failure
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO notes VALUES ('three')")
        await tx.execute("INSERT INTO notes VALUES ('four')")
    assert on_disk(db.path) == ["three", "four"]


async def test_a_failing_statement_rolls_back_its_whole_transaction(db: Database) -> None:
    with pytest.raises(sqlite3.IntegrityError, match="NOT NULL"):
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO notes VALUES ('written first')")
            await tx.execute("INSERT INTO notes VALUES (NULL)")
    assert await texts(db) == []
    await db.execute("INSERT INTO notes VALUES ('the database is still usable')")
    assert on_disk(db.path) == ["the database is still usable"]


async def test_nothing_runs_twice_when_one_of_many_concurrent_writes_fails(db: Database) -> None:
    statements: list[str] = []
    await db._conn.set_trace_callback(statements.append)  # every statement SQLite runs on the connection
    writes = [f"INSERT INTO notes VALUES ('{n}')" for n in "abc"] + ["INSERT INTO notes VALUES (NULL)"]
    writes += [f"INSERT INTO notes VALUES ('{n}')" for n in "def"]

    async def unit(n: str) -> None:
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO notes VALUES (?)", (f"tx {n}",))

    # Started in one pass of the event loop, as many conversations' writes are.
    outcomes = await asyncio.gather(*(db.execute(sql) for sql in writes), unit("1"), unit("2"), return_exceptions=True)

    assert [isinstance(outcome, sqlite3.IntegrityError) for outcome in outcomes] == [False] * 3 + [True] + [False] * 5
    assert on_disk(db.path) == ["a", "b", "c", "d", "e", "f", "tx 1", "tx 2"]
    for sql in writes:
        assert statements.count(sql) == 1, sql
    assert statements.count("INSERT INTO notes VALUES ('tx 1')") == 1
    assert statements.count("BEGIN IMMEDIATE") == 2


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
    reads = asyncio.create_task(db.fetchall("SELECT text FROM notes"))
    await asyncio.sleep(0)
    assert not other.done() and not reads.done()
    release.set()
    with pytest.raises(RuntimeError):
        await failing
    assert await other == 1
    # It ran after the rollback, not inside the transaction, which would have shown the rolled-back row.
    assert [row["text"] for row in await reads] == ["kept"]
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

    await asyncio.gather(*(writer(name) for name in "abcd"), committer(), committer())

    rows = await texts(db)
    assert len(rows) == 4 * 20 + 2 * 2 * 10
    for name in "abcd":
        assert [r for r in rows if r.startswith(name)] == [f"{name}{i}" for i in range(20)]
    for i in range(10):  # a transaction's statements stay together
        first = [index for index, row in enumerate(rows) if row == f"tx{i}a"]
        assert [rows[index + 1] for index in first] == [f"tx{i}b", f"tx{i}b"]


async def test_statements_inside_the_tasks_transaction_join_it_and_so_does_a_nested_transaction(db: Database) -> None:
    # How bus and store methods (which call db.execute) compose into one unit of work.
    with pytest.raises(RuntimeError):
        async with db.transaction() as outer:
            await db.execute("INSERT INTO notes VALUES ('through the database')")
            async with db.transaction() as inner:
                assert inner is outer
                await inner.execute("INSERT INTO notes VALUES ('nested')")
            assert await db.fetchall("SELECT text FROM notes ORDER BY rowid") != []  # sees its own writes
            raise RuntimeError("the outer unit fails")
    assert await texts(db) == []


async def test_a_task_spawned_inside_a_transaction_does_not_write_through_it(db: Database) -> None:
    # It inherits the context the transaction is kept in, but its writes are its own: they wait for
    # the transaction to end and are not rolled back with it.
    with pytest.raises(RuntimeError):
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO notes VALUES ('in the transaction')")
            spawned = asyncio.create_task(db.execute("INSERT INTO notes VALUES ('from another task')"))
            await asyncio.sleep(0)
            raise RuntimeError("the transaction fails")
    await spawned
    assert on_disk(db.path) == ["from another task"]


async def test_a_cancelled_transaction_is_rolled_back_and_the_database_stays_usable(db: Database) -> None:
    inside = asyncio.Event()

    async def unit() -> None:
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO notes VALUES ('cancelled')")
            inside.set()
            await asyncio.Event().wait()

    task = asyncio.create_task(unit())
    await inside.wait()
    waiting = asyncio.create_task(db.execute("INSERT INTO notes VALUES ('after')"))
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await waiting
    async with db.transaction() as tx:  # a BEGIN works: no transaction was left open
        await tx.execute("INSERT INTO notes VALUES ('next')")
    assert on_disk(db.path) == ["after", "next"]


async def test_a_commit_that_fails_is_rolled_back_so_the_database_stays_usable(db: Database) -> None:
    await db.execute("CREATE TABLE parents (id INTEGER PRIMARY KEY)")
    await db.execute("CREATE TABLE children (parent INTEGER REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)")
    # A deferred constraint is checked at COMMIT, which SQLite then refuses with the transaction
    # still open, as it may on a full disk or an I/O error.
    with pytest.raises(sqlite3.IntegrityError):
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO notes VALUES ('with the orphan')")
            await tx.execute("INSERT INTO children VALUES (8)")
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO notes VALUES ('after a failed commit')")
    assert on_disk(db.path) == ["after a failed commit"]
    assert await db.fetchall("SELECT * FROM children") == []


async def test_after_commit_runs_once_the_unit_is_committed_and_never_for_one_rolled_back(db: Database) -> None:
    told: list[str] = []
    db.after_commit(lambda: told.append("outside: at once"))
    assert told == ["outside: at once"]
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO notes VALUES ('kept')")
        db.after_commit(lambda: told.append(f"committed: {on_disk(db.path)}"))
        assert len(told) == 1
    assert told[1] == "committed: ['kept']"
    with pytest.raises(RuntimeError):
        async with db.transaction() as tx:
            await tx.execute("INSERT INTO notes VALUES ('undone')")
            db.after_commit(lambda: told.append("rolled back"))
            raise RuntimeError("undone")
    assert len(told) == 2


async def test_writes_gathered_in_a_transaction_land_in_order_and_commit_as_one(db: Database) -> None:
    async def two_statements(first: str, second: str) -> int:  # a store method of two statements
        await db.execute("INSERT INTO notes VALUES (?)", (first,))
        return await db.execute("INSERT INTO notes VALUES (?)", (second,))

    async with db.transaction() as tx:
        results = await tx.gather(
            db.execute("INSERT INTO notes VALUES ('a')"),
            two_statements("b", "d"),
            db.fetchall("INSERT INTO notes VALUES ('c') RETURNING text"),
        )
        assert on_disk(db.path) == []  # nothing is visible before the commit
    assert results[0] == 1 and results[1] == 1 and [dict(row) for row in results[2]] == [{"text": "c"}]
    # First statements in the order given, then what each write awaited after its first.
    assert on_disk(db.path) == ["a", "b", "c", "d"]


async def test_a_gathered_write_that_fails_rolls_back_the_others_even_those_still_running(db: Database) -> None:
    ended = asyncio.Event()

    async def slow() -> None:
        try:
            for _ in range(5):  # still at work when the failing insert has answered
                await db.fetchall("SELECT 1")
            await db.execute("INSERT INTO notes VALUES ('late')")
        finally:
            ended.set()

    with pytest.raises(sqlite3.IntegrityError, match="NOT NULL"):
        async with db.transaction() as tx:
            early = db.execute("INSERT INTO notes VALUES ('early')")
            await tx.gather(early, db.execute("INSERT INTO notes VALUES (NULL)"), slow())
    await asyncio.wait_for(ended.wait(), 10)
    # Had the block rolled back before 'late' was written, 'late' would have been committed on its own.
    assert on_disk(db.path) == []
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO notes VALUES ('after')")
    assert await texts(db) == ["after"]


async def test_writes_gathered_outside_a_transaction_are_each_atomic_and_the_first_error_is_raised(
    db: Database,
) -> None:
    with pytest.raises(sqlite3.IntegrityError):
        await db.gather(
            db.execute("INSERT INTO notes VALUES ('one')"),
            db.execute("INSERT INTO notes VALUES (NULL)"),
            db.execute("INSERT INTO notes VALUES ('three')"),
        )
    assert on_disk(db.path) == ["one", "three"]


async def test_a_task_spawned_by_a_gathered_write_does_not_write_through_the_transaction(db: Database) -> None:
    spawned: list[asyncio.Task[int]] = []

    async def spawning() -> None:
        spawned.append(asyncio.create_task(db.execute("INSERT INTO notes VALUES ('from another task')")))
        await db.execute("INSERT INTO notes VALUES ('gathered')")

    with pytest.raises(RuntimeError):
        async with db.transaction() as tx:
            await tx.gather(spawning())
            raise RuntimeError("the transaction fails")
    await spawned[0]
    assert on_disk(db.path) == ["from another task"]


async def test_executemany_writes_every_row_or_none(db: Database) -> None:
    assert await db.executemany("INSERT INTO notes VALUES (?)", [("a",), ("b",), ("c",)]) == 3
    with pytest.raises(sqlite3.IntegrityError):
        await db.executemany("INSERT INTO notes VALUES (?)", [("d",), (None,), ("e",)])
    assert on_disk(db.path) == ["a", "b", "c"]


async def test_a_transaction_used_after_its_block_refuses_statements(db: Database) -> None:
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO notes VALUES ('inside')")
    with pytest.raises(RuntimeError, match="transaction is over"):
        await tx.execute("INSERT INTO notes VALUES ('outside')")
    assert await texts(db) == ["inside"]


async def test_another_process_locking_the_file_fails_writes_clearly_and_reads_go_on(db: Database) -> None:
    await db.execute("INSERT INTO notes VALUES ('before')")
    await db.fetchall("PRAGMA busy_timeout = 20")  # the 5 s default, scaled down
    lock = WriteLock(db.path)
    try:
        with pytest.raises(sqlite3.OperationalError, match="locked") as single:
            await db.execute("INSERT INTO notes VALUES ('a')")
        with pytest.raises(sqlite3.OperationalError, match="locked") as unit:
            async with db.transaction() as tx:
                await tx.execute("INSERT INTO notes VALUES ('b')")
        assert await texts(db) == ["before"]  # a read takes no lock (WAL)
    finally:
        lock.release()
    assert is_transient(single.value) and is_transient(unit.value)  # what the workers ride out
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO notes VALUES ('after')")
    assert on_disk(db.path) == ["before", "after"]


WRITER = """
import asyncio, sys
from pathlib import Path
from bot.db import Database

async def main() -> None:
    db = await Database.open(Path(sys.argv[1]))
    try:
        for i in range(int(sys.argv[2])):
            async with db.transaction() as tx:
                await tx.execute("INSERT INTO notes VALUES (?)", (f"child {i}",))
                await tx.execute("INSERT INTO notes VALUES (?)", (f"child {i} again",))
    finally:
        await db.close()

asyncio.run(main())
"""


async def test_two_processes_write_one_file_at_once_and_nothing_is_lost(db: Database) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(WRITER), str(db.path), "200"],
        env=subprocess_env(),
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ours = 0
        while child.poll() is None or ours < 200:
            async with db.transaction() as tx:
                await tx.execute("INSERT INTO notes VALUES (?)", (f"parent {ours}",))
            ours += 1
        _, stderr = await asyncio.to_thread(child.communicate, timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == 0, stderr
    rows = on_disk(db.path)
    assert [r for r in rows if r.startswith("parent")] == [f"parent {i}" for i in range(ours)]
    children = [r for r in rows if r.startswith("child")]
    assert children == [text for i in range(200) for text in (f"child {i}", f"child {i} again")]


# The database is kept where a long-lived application keeps it, so it outlives the event loop: were
# its aiosqlite connection left open, that connection's thread would keep the process from exiting.
CLOSER = """
import asyncio, sys
from pathlib import Path
from bot.db import Database

kept = []

async def main() -> None:
    db = await Database.open(Path(sys.argv[1]))
    kept.append(db)
    await db.execute("CREATE TABLE IF NOT EXISTS notes (text TEXT NOT NULL)")
    async with db.transaction() as tx:
        await tx.execute("INSERT INTO notes VALUES ('written')")
    await db.close()
    await db.close()
    print("closed")

asyncio.run(main())
"""


def test_a_process_that_closes_its_database_exits_at_once_and_leaves_no_log_behind(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(CLOSER), str(path)],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "closed\n"
    assert on_disk(path) == ["written"]
    assert not path.with_name("store.db-wal").exists()  # the last close folded the log into the file


async def test_a_closed_database_refuses_statements_instead_of_hanging(tmp_path: Path) -> None:
    database = await Database.open(tmp_path / "closed.db")
    await database.close()
    with pytest.raises(RuntimeError, match="closed"):
        await database.execute("SELECT 1")
    with pytest.raises(RuntimeError, match="closed"):
        async with database.transaction():
            pass


async def test_opening_a_fresh_file_creates_its_folder_and_schema_in_wal_mode(tmp_path: Path) -> None:
    database = await Database.open(tmp_path / "new" / "folder" / "store.db")
    try:
        [(mode,)] = await database.fetchall("PRAGMA journal_mode")
        tables = {row["name"] for row in await database.fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        await database.close()
    assert mode == "wal"
    assert {"bus_messages", "runs", "steps", "turns", "_migrations"} <= tables
