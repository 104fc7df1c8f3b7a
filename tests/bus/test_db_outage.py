"""The long-running loops (a bus worker, the reminders scheduler) ride out a real SQLite file that
another process keeps locked past the busy timeout: one warning, backoff, one line when it is back,
and every message handled exactly once afterwards. Errors that waiting cannot fix still end them."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.bus import INBOUND, Bus, Delivery, InboundMessage, Sender, Worker
from bot.db import Database, is_transient
from bot.tools import ToolContext
from tests.fakes.scripted_model import ScriptedModel, say
from tests.helpers import WriteLock, outbox

AppFactory = Callable[..., Awaitable[App]]

# Milliseconds a write waits for another process's lock before failing: the 5 s default, scaled down.
BUSY_MS = 20


@pytest.fixture
def locks() -> Iterator[list[WriteLock]]:
    """Locks taken by a test, released at its end whatever happens."""
    taken: list[WriteLock] = []
    yield taken
    for lock in taken:
        lock.release()


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    """A database on a real file whose writes give up on another process's lock after BUSY_MS."""
    database = await Database.open(tmp_path / "bus.db")
    await database.fetchall(f"PRAGMA busy_timeout = {BUSY_MS}")
    yield database
    await database.close()


async def publish_one(bus: Bus) -> None:
    """Message #1 on topic "in"."""
    message = InboundMessage(channel="test", conversation="c", sender=Sender(id="u"), text="hi")
    await bus.publish("in", message, conversation="c")


@pytest.fixture
def outage_log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="bot.db.outage")
    return caplog


def outage_lines(caplog: pytest.LogCaptureFixture, level: int = logging.WARNING) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "bot.db.outage" and r.levelno == level]


def mentions(caplog: pytest.LogCaptureFixture, text: str) -> bool:
    return any(r.name == "bot.db.outage" and text in r.getMessage() for r in caplog.records)


async def until(
    condition: Callable[[], Awaitable[bool] | bool], running: asyncio.Task[None], timeout: float = 20.0
) -> None:
    """Wait until ``condition`` holds, checking every 10 ms, for ``timeout`` seconds at most;
    fail at once if the loop under test (``running``) ends meanwhile."""

    async def check() -> None:
        while True:
            met = condition()
            if met if isinstance(met, bool) else await met:
                return
            if running.done():
                running.result()  # its error, if it failed
                pytest.fail("the loop stopped")
            await asyncio.sleep(0.01)

    await asyncio.wait_for(check(), timeout)


async def app_with_short_busy_timeout(make_app: AppFactory, model: ScriptedModel, **overrides: Any) -> App:
    app = await make_app(model, **overrides)
    await app.db.fetchall(f"PRAGMA busy_timeout = {BUSY_MS}")
    return app


async def send(app: App, text: str) -> None:
    conversation = "terminal:ann"
    message = InboundMessage(channel="terminal", conversation=conversation, sender=Sender(id="ann"), text=text)
    await app.bus.publish(INBOUND, message, conversation=conversation)


def assert_one_streak(caplog: pytest.LogCaptureFixture, doing: str) -> None:
    """One warning when the outage started and one when it ended; no traceback."""
    started, ended = outage_lines(caplog)
    assert "database unavailable while " + doing in started.getMessage()
    assert "database is locked" in started.getMessage()
    assert "database usable again after" in ended.getMessage()
    assert started.exc_info is None and ended.exc_info is None


async def inbound_counts_become(app: App, counts: dict[str, int], running: asyncio.Task[None]) -> None:
    async def reached() -> bool:
        return await app.bus.counts(INBOUND) == counts

    await until(reached, running)


async def test_a_runner_worker_waits_out_a_locked_database_then_answers_once(
    make_app: AppFactory, outage_log: pytest.LogCaptureFixture, locks: list[WriteLock]
) -> None:
    model = ScriptedModel(lambda messages: say("Noted."))
    app = await app_with_short_busy_timeout(make_app, model)
    await send(app, "buy milk")
    locks.append(WriteLock(app.db.path))
    worker = app.runner_worker()
    running = asyncio.create_task(worker.run())
    # It failed to claim, backed off and tried again, quietly after the first line.
    await until(lambda: len(outage_lines(outage_log, logging.DEBUG)) >= 3, running)
    assert not running.done()
    assert model.calls == [] and await app.bus.counts(INBOUND) == {"pending": 1}

    locks[0].release()
    await inbound_counts_become(app, {"done": 1}, running)
    await worker.stop()
    await running
    assert [m.text for m in await outbox(app)] == ["Noted."]
    assert len(model.calls) == 1
    assert_one_streak(outage_log, "claiming messages")


async def test_a_turn_whose_finish_meets_a_locked_database_is_redelivered_and_answered_once(
    make_app: AppFactory, outage_log: pytest.LogCaptureFixture, locks: list[WriteLock]
) -> None:
    app: App

    def reply(messages: list[dict[str, Any]]) -> Any:
        if not locks:  # the first run: another process takes the lock before the turn is recorded
            locks.append(WriteLock(app.db.path))
        return say("Noted.")

    model = ScriptedModel(reply)
    app = await app_with_short_busy_timeout(make_app, model, bus={"lease_seconds": 1.0})
    await send(app, "buy milk")
    worker = app.runner_worker()
    running = asyncio.create_task(worker.run())
    # The turn could not be recorded, nor the message handed back: it stays leased.
    await until(lambda: mentions(outage_log, f"settling {INBOUND}#1"), running)
    assert not running.done()
    assert await app.bus.counts(INBOUND) == {"leased": 1} and await outbox(app) == []

    locks[0].release()
    await inbound_counts_become(app, {"done": 1}, running)  # redelivered once its lease ran out
    await worker.stop()
    await running
    assert len(model.calls) == 2
    assert [m.text for m in await outbox(app)] == ["Noted."]


async def test_a_lease_is_renewed_once_the_database_is_back_so_the_message_is_not_handled_twice(
    db: Database, outage_log: pytest.LogCaptureFixture, locks: list[WriteLock]
) -> None:
    bus = Bus(db)
    handled: list[int] = []
    finish = asyncio.Event()

    async def handle(delivery: Delivery) -> None:
        handled.append(delivery.id)
        await finish.wait()

    # Renewed every second; a second slot would take the message again if its lease ran out.
    worker = Worker(bus, "in", handle, concurrency=2, lease=3.0)
    await publish_one(bus)
    running = asyncio.create_task(worker.run())
    await until(lambda: handled == [1], running)
    locks.append(WriteLock(db.path))
    await until(lambda: mentions(outage_log, "renewing the lease of in#1"), running)
    [(locked_until,)] = await db.fetchall("SELECT lease_until FROM bus_messages WHERE id = 1")
    locks[0].release()

    async def renewed() -> bool:
        [(until_now,)] = await db.fetchall("SELECT lease_until FROM bus_messages WHERE id = 1")
        return bool(until_now > locked_until)

    await until(renewed, running, timeout=10)
    finish.set()

    async def acked() -> bool:
        return await bus.status(1) == "done"

    await until(acked, running)
    await worker.stop()
    await running
    assert handled == [1]


async def test_a_handler_whose_ack_meets_a_locked_database_leaves_the_worker_running_and_is_redelivered(
    db: Database, outage_log: pytest.LogCaptureFixture, locks: list[WriteLock]
) -> None:
    # The outbound and events workers' handlers return normally and the worker acks for them; an
    # ack that meets another process's lock must not end the worker (mutmut: the worker's own ack
    # settled with no message survived, as the runner acks inside its own transaction).
    bus = Bus(db)
    handled: list[int] = []

    async def handle(delivery: Delivery) -> None:
        handled.append(delivery.id)
        if not locks:  # the first time: another process takes the lock before the ack
            locks.append(WriteLock(db.path))

    worker = Worker(bus, "in", handle, lease=1.0)
    await publish_one(bus)
    running = asyncio.create_task(worker.run())
    await until(lambda: mentions(outage_log, "settling in#1"), running)
    assert not running.done()
    locks[0].release()

    async def acked() -> bool:
        return await bus.status(1) == "done"

    await until(acked, running)  # redelivered once its lease ran out, then acked
    await worker.stop()
    await running
    assert handled == [1, 1]
    assert_one_streak(outage_log, "settling in#1")


async def test_a_worker_stopped_while_the_database_is_locked_stops_cleanly_and_the_message_comes_back(
    db: Database, outage_log: pytest.LogCaptureFixture, locks: list[WriteLock]
) -> None:
    # stop() hands an unfinished message back; when that meets another process's lock the message
    # stays leased (it comes back when the lease runs out) and stopping must still end cleanly.
    bus = Bus(db)
    started = asyncio.Event()

    async def handle(delivery: Delivery) -> None:
        started.set()
        await asyncio.Event().wait()  # never finishes on its own

    worker = Worker(bus, "in", handle, lease=1.0)
    await publish_one(bus)
    running = asyncio.create_task(worker.run())
    await asyncio.wait_for(started.wait(), 20)
    locks.append(WriteLock(db.path))
    await worker.stop(grace=0)
    await running  # ends without an error
    assert mentions(outage_log, "settling in#1")
    locks[0].release()
    [delivery] = await until_claimed(bus)
    assert delivery.attempts == 2


async def until_claimed(bus: Bus, timeout: float = 20.0) -> list[Delivery]:
    """Claim from topic "in" until something comes (a lease running out), for ``timeout`` seconds."""

    async def claim() -> list[Delivery]:
        while not (claimed := await bus.claim("in", owner="test", lease=30)):
            await asyncio.sleep(0.01)
        return claimed

    return await asyncio.wait_for(claim(), timeout)


async def test_the_scheduler_waits_out_a_locked_database_then_fires_a_due_reminder_once(
    make_app: AppFactory, outage_log: pytest.LogCaptureFixture, locks: list[WriteLock]
) -> None:
    app = await app_with_short_busy_timeout(make_app, ScriptedModel())
    context = ToolContext(
        conversation="terminal:ann", channel="terminal", recipient="ann", run_id="run-1", inbound_id="in-1"
    )
    made = await app.handler._dispatcher.call(
        "schedule_message", {"text": "stretch", "at": datetime.now(UTC).isoformat()}, context
    )
    assert made.result["success"], made.result
    locks.append(WriteLock(app.db.path))
    running = asyncio.create_task(app.scheduler.run())
    await until(lambda: len(outage_lines(outage_log, logging.DEBUG)) >= 3, running)
    assert not running.done() and await outbox(app) == []

    locks[0].release()

    async def fired() -> bool:
        return len(await outbox(app)) > 0

    await until(fired, running)
    await app.scheduler.stop()
    await running
    assert [m.text for m in await outbox(app)] == ["⏰ stretch"]
    assert_one_streak(outage_log, "firing due reminders")


async def test_a_worker_whose_tables_are_gone_stops_with_the_error(make_app: AppFactory) -> None:
    app = await make_app(ScriptedModel(lambda messages: say("Noted.")))
    await app.db.execute("DROP TABLE bus_heads")
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        await asyncio.wait_for(app.runner_worker().run(), 10)


async def test_the_scheduler_whose_table_is_gone_stops_with_the_error(make_app: AppFactory) -> None:
    app = await make_app(ScriptedModel())
    await app.db.execute("DROP TABLE reminders")
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        await asyncio.wait_for(app.scheduler.run(), 10)


async def test_locked_and_full_are_transient_and_a_missing_table_is_not(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "a.db", isolation_level=None, timeout=0.01)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    lock = WriteLock(tmp_path / "a.db")
    with pytest.raises(sqlite3.OperationalError) as locked:
        conn.execute("BEGIN IMMEDIATE")
    lock.release()
    [(pages,)] = conn.execute("PRAGMA page_count").fetchall()
    conn.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(sqlite3.OperationalError) as full:
        conn.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
    with pytest.raises(sqlite3.OperationalError) as missing:
        conn.execute("SELECT * FROM nowhere")
    conn.close()
    assert is_transient(locked.value) and "locked" in str(locked.value)
    assert is_transient(full.value) and "full" in str(full.value)
    assert is_transient(OSError(errno.EIO, "Input/output error"))
    io_error = sqlite3.OperationalError("disk I/O error")
    io_error.sqlite_errorcode = sqlite3.SQLITE_IOERR_WRITE  # type: ignore[attr-defined]  # as SQLite reports it
    assert is_transient(io_error)
    assert not is_transient(missing.value)
    assert not is_transient(TypeError("a bug"))


def corrupt(path: Path) -> None:
    """Overwrite the database file and its write-ahead log with garbage and zero its shared-memory
    index (so the open connection reads the file again), as a failing disk or another program might:
    SQLite then finds "file is not a database"."""
    wal, shm = (path.with_name(path.name + suffix) for suffix in ("-wal", "-shm"))
    for file in (path, wal):
        if file.exists():
            file.write_bytes(os.urandom(max(file.stat().st_size, 4096)))
    if shm.exists():
        shm.write_bytes(bytes(shm.stat().st_size))


async def test_a_worker_whose_database_is_corrupted_stops_with_the_error_instead_of_waiting(
    make_app: AppFactory, outage_log: pytest.LogCaptureFixture
) -> None:
    # A corrupt file is not an outage: waiting cannot mend it, and a worker that waited would look
    # alive while answering nobody.
    app = await make_app(ScriptedModel(lambda messages: say("Noted.")))
    await send(app, "buy milk")
    running = asyncio.create_task(app.runner_worker().run())
    await inbound_counts_become(app, {"done": 1}, running)
    corrupt(app.db.path)
    with pytest.raises(sqlite3.DatabaseError, match="file is not a database"):
        await asyncio.wait_for(running, 10)
    assert not outage_lines(outage_log)


async def test_a_corrupt_file_is_not_transient(tmp_path: Path) -> None:
    path = tmp_path / "a.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    corrupt(path)
    with pytest.raises(sqlite3.DatabaseError) as broken:
        conn.execute("SELECT * FROM t")
    conn.close()
    assert "file is not a database" in str(broken.value) and not is_transient(broken.value)
