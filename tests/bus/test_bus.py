"""The bus on a real SQLite file: ordering, leases, retries, dead letters, wake-ups."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.bus import Bus, Delivery, Fatal, InboundMessage, Retry, Sender, Worker
from bot.db import Database


class Clock:
    """A clock the test moves by hand, so leases and delays need no sleeping."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = await Database.open(tmp_path / "bus.db")
    yield database
    await database.close()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def bus(db: Database, clock: Clock) -> Bus:
    return Bus(db, clock=clock)


def msg(text: str, conversation: str = "c1") -> InboundMessage:
    return InboundMessage(channel="test", conversation=conversation, sender=Sender(id="u"), text=text)


async def publish(bus: Bus, text: str, conversation: str = "c1", **kwargs: object) -> int:
    return (await bus.publish("in", msg(text, conversation), conversation=conversation, **kwargs)).id  # type: ignore[arg-type]


async def test_a_published_message_is_claimed_typed_and_acked_once(bus: Bus) -> None:
    await publish(bus, "hello")
    [delivery] = await bus.claim("in", owner="w", lease=30)
    assert delivery.parse(InboundMessage).text == "hello"
    assert delivery.attempts == 1
    assert await bus.claim("in", owner="w", lease=30) == []
    assert await bus.ack(delivery.id)
    assert not await bus.ack(delivery.id)
    assert await bus.status(delivery.id) == "done"
    assert await bus.counts("in") == {"done": 1}


async def test_a_dedupe_key_stores_a_message_once(bus: Bus) -> None:
    first = await bus.publish("in", msg("a"), conversation="c1", dedupe_key="update-7")
    again = await bus.publish("in", msg("a"), conversation="c1", dedupe_key="update-7")
    assert not first.duplicate and again.duplicate and again.id == first.id
    assert len(await bus.claim("in", owner="w", lease=30, limit=10)) == 1


def part(text: str, group: str, conversation: str = "c1") -> InboundMessage:
    return msg(text, conversation).model_copy(update={"group": group})


async def test_an_album_is_held_until_no_part_came_for_the_delay_and_its_waiting_parts_are_found_in_order(
    bus: Bus, clock: Clock
) -> None:
    ids = [(await bus.publish("in", part(f"photo {i}", "album"), conversation="c1")).id for i in range(3)]
    other_album = (await bus.publish("in", part("other", "trip"), conversation="c1")).id
    elsewhere = (await bus.publish("in", part("elsewhere", "album", "c2"), conversation="c2")).id
    await bus.hold_group("in", "c1", "album", delay=2.0)
    # The album's parts wait in their conversation; the same group name in another conversation does not.
    [claimed] = await bus.claim("in", owner="w", lease=30, limit=10, conversation="c2")
    assert claimed.id == elsewhere
    assert await bus.claim("in", owner="w", lease=30, conversation="c1") == []
    clock.now += 1.9
    assert await bus.claim("in", owner="w", lease=30, conversation="c1") == []
    clock.now += 0.2
    [first] = await bus.claim("in", owner="w", lease=30, conversation="c1")
    assert first.id == ids[0]
    # The rest of the album, still pending behind it, oldest first; not the other group's message.
    assert [d.id for d in await bus.group("in", "c1", "album")] == ids[1:]
    assert [d.id for d in await bus.group("in", "c1", "trip")] == [other_album]
    assert await bus.group("in", "c2", "album") == []  # claimed, so no longer waiting


async def test_a_conversation_is_served_in_order_one_at_a_time_while_others_proceed(bus: Bus) -> None:
    a1 = await publish(bus, "a1", "a")
    a2 = await publish(bus, "a2", "a")
    b1 = await publish(bus, "b1", "b")
    claimed = await bus.claim("in", owner="w", lease=30, limit=10)
    assert [d.id for d in claimed] == [a1, b1]
    assert await bus.claim("in", owner="w", lease=30, limit=10) == []
    await bus.ack(a1)
    [next_a] = await bus.claim("in", owner="w", lease=30, limit=10)
    assert next_a.id == a2


async def test_a_nacked_message_comes_back_after_its_delay(bus: Bus, clock: Clock) -> None:
    await publish(bus, "x")
    [delivery] = await bus.claim("in", owner="w", lease=30)
    await bus.nack(delivery.id, delay=10, error="busy")
    clock.now += 9.9
    assert await bus.claim("in", owner="w", lease=30) == []
    assert await bus.next_due_in("in") == pytest.approx(0.1)
    clock.now += 0.2
    [again] = await bus.claim("in", owner="w", lease=30)
    assert again.id == delivery.id and again.attempts == 2


async def test_an_expired_lease_is_redelivered_and_an_extended_one_is_not(bus: Bus, clock: Clock) -> None:
    await publish(bus, "x")
    [delivery] = await bus.claim("in", owner="crashed", lease=5)
    clock.now += 4
    assert await bus.extend(delivery.id, 5)
    clock.now += 4
    assert await bus.claim("in", owner="other", lease=5) == []
    clock.now += 2
    [again] = await bus.claim("in", owner="other", lease=5)
    assert again.id == delivery.id and again.attempts == 2


async def test_a_dead_letter_is_kept_with_its_error_and_never_delivered(bus: Bus) -> None:
    await publish(bus, "x")
    await publish(bus, "y")
    [delivery] = await bus.claim("in", owner="w", lease=30)
    await bus.dead(delivery.id, "poison")
    [dead] = await bus.dead_letters("in")
    assert dead["id"] == delivery.id and dead["last_error"] == "poison"
    [following] = await bus.claim("in", owner="w", lease=30)
    assert following.parse(InboundMessage).text == "y"


# The worker loop


async def run_burst(worker: Worker) -> None:
    await asyncio.wait_for(worker.run(burst=True), timeout=10)


async def test_the_worker_acks_what_its_handler_finishes(db: Database) -> None:
    bus = Bus(db)
    seen: list[str] = []

    async def handler(delivery: Delivery) -> None:
        seen.append(delivery.parse(InboundMessage).text)

    for text in ("one", "two", "three"):
        await publish(bus, text)
    await run_burst(Worker(bus, "in", handler, concurrency=4))
    assert seen == ["one", "two", "three"]
    assert await bus.counts("in") == {"done": 3}


async def test_a_failing_handler_is_retried_with_backoff_then_dead_lettered(db: Database) -> None:
    bus = Bus(db)
    attempts: list[int] = []
    dead: list[tuple[int, str]] = []

    async def handler(delivery: Delivery) -> None:
        attempts.append(delivery.attempts)
        raise RuntimeError("model down")

    async def on_dead(delivery: Delivery, error: BaseException) -> None:
        dead.append((delivery.attempts, str(error)))

    await publish(bus, "x")
    worker = Worker(bus, "in", handler, max_attempts=3, backoff=0.01, backoff_max=0.02, on_dead=on_dead)
    await run_burst(worker)
    assert attempts == [1, 2, 3]
    assert dead == [(3, "model down")]
    [letter] = await bus.dead_letters("in")
    assert "RuntimeError: model down" in letter["last_error"]


async def test_a_fatal_error_is_dead_lettered_at_once_and_retry_succeeds_later(db: Database) -> None:
    bus = Bus(db)
    attempts: dict[str, int] = {}

    async def handler(delivery: Delivery) -> None:
        text = delivery.parse(InboundMessage).text
        attempts[text] = delivery.attempts
        if text == "poison":
            raise Fatal("cannot ever work")
        if delivery.attempts == 1:
            raise Retry(delay=0.01)

    await publish(bus, "poison", "a")
    await publish(bus, "flaky", "b")
    await run_burst(Worker(bus, "in", handler, max_attempts=5))
    assert attempts == {"poison": 1, "flaky": 2}
    assert await bus.status(1) == "dead" and await bus.status(2) == "done"


async def test_an_idle_worker_wakes_on_an_in_process_publish_without_polling(db: Database) -> None:
    bus = Bus(db)
    handled = asyncio.Event()

    async def handler(delivery: Delivery) -> None:
        handled.set()

    # A poll interval far longer than the test's timeout: only the wake-up can deliver in time.
    worker = Worker(bus, "in", handler, poll_interval=3600)
    running = asyncio.create_task(worker.run())
    try:
        await bus.wait("in", timeout=0.05)  # let the worker go idle first
        await publish(bus, "wake up")
        await asyncio.wait_for(handled.wait(), timeout=5)
    finally:
        await worker.stop(grace=1)
        await running


async def test_a_worker_at_its_limit_takes_the_next_message_as_soon_as_a_handler_finishes(db: Database) -> None:
    bus = Bus(db)
    handled: list[str] = []
    both = asyncio.Event()

    async def handler(delivery: Delivery) -> None:
        handled.append(delivery.parse(InboundMessage).text)
        if len(handled) == 2:
            both.set()

    await publish(bus, "first", "c1")
    await publish(bus, "second", "c2")
    # One slot, and a poll interval far longer than the test's timeout: only the end of the first
    # handler can start the second.
    worker = Worker(bus, "in", handler, concurrency=1, poll_interval=3600)
    running = asyncio.create_task(worker.run())
    try:
        await asyncio.wait_for(both.wait(), timeout=5)
    finally:
        await worker.stop(grace=1)
        await running
    assert handled == ["first", "second"]


async def test_stopping_releases_an_unfinished_message_for_redelivery(db: Database) -> None:
    bus = Bus(db)
    started = asyncio.Event()

    async def stuck(delivery: Delivery) -> None:
        started.set()
        await asyncio.Event().wait()

    await publish(bus, "long job")
    worker = Worker(bus, "in", stuck)
    running = asyncio.create_task(worker.run())
    await asyncio.wait_for(started.wait(), timeout=5)
    await worker.stop(grace=0.01)
    await running
    assert await bus.status(1) == "pending"
    [again] = await bus.claim("in", owner="next", lease=30)
    assert again.attempts == 2


async def test_draining_handles_what_is_queued_and_leaves_what_comes_due_after_the_grace(db: Database) -> None:
    bus = Bus(db)
    handled: list[str] = []
    release = asyncio.Event()

    async def handler(delivery: Delivery) -> None:
        await release.wait()
        handled.append(delivery.parse(InboundMessage).text)

    await publish(bus, "in flight", conversation="a")
    await publish(bus, "queued", conversation="b")
    await publish(bus, "later", conversation="c", delay=3600)  # a retry's backoff, past any grace
    worker = Worker(bus, "in", handler, concurrency=1, poll_interval=3600)
    running = asyncio.create_task(worker.run())
    draining = asyncio.create_task(worker.drain(30))
    release.set()
    await asyncio.wait_for(draining, timeout=10)  # returns long before the grace is up
    await running
    assert handled == ["in flight", "queued"]
    assert [await bus.status(i) for i in (1, 2, 3)] == ["done", "done", "pending"]


async def test_a_live_handler_keeps_its_lease_so_no_second_worker_gets_the_message(db: Database, clock: Clock) -> None:
    bus = Bus(db, clock=clock)
    lease = 0.3
    handled: list[str] = []

    async def lease_until(message_id: int) -> float:
        row = await db.fetchone("SELECT lease_until FROM bus_messages WHERE id = ?", (message_id,))
        assert row is not None and row["lease_until"] is not None
        return float(row["lease_until"])

    started = asyncio.Event()

    async def long_job(delivery: Delivery) -> None:
        handled.append("first")
        await started.wait()  # the second worker is polling
        # The bus's clock moves on by ten leases while this handler works; after each step the
        # worker's heartbeat must have renewed the lease from the new time before time moves again.
        for _ in range(15):
            clock.now += lease * 2 / 3
            async with asyncio.timeout(10):
                while await lease_until(delivery.id) < clock.now + lease * 0.99:
                    await asyncio.sleep(0.01)  # the heartbeat runs on its own timer
            assert await bus.claim("in", owner="second", lease=lease) == []

    async def second_handler(delivery: Delivery) -> None:
        handled.append("second")

    message_id = await publish(bus, "a long job")
    first = Worker(bus, "in", long_job, lease=lease, name="first")
    second = Worker(bus, "in", second_handler, lease=lease, poll_interval=0.01, name="second")
    working = asyncio.create_task(run_burst(first))
    async with asyncio.timeout(10):
        while await bus.status(message_id) != "leased":
            await bus.wait("in", timeout=0.05)
    watching = asyncio.create_task(second.run())
    started.set()
    try:
        await working
    finally:
        await second.stop(grace=1)
        await watching
    assert handled == ["first"]
    assert await bus.status(message_id) == "done"
    row = await db.fetchone("SELECT attempts FROM bus_messages WHERE id = ?", (message_id,))
    assert row is not None and row["attempts"] == 1


async def test_every_running_handler_keeps_its_lease(db: Database, clock: Clock) -> None:
    bus = Bus(db, clock=clock)
    lease = 0.3
    ids = [await publish(bus, "long a", "c1"), await publish(bus, "long b", "c2")]
    handled: list[int] = []
    both, release = asyncio.Event(), asyncio.Event()

    async def long_job(delivery: Delivery) -> None:
        handled.append(delivery.id)
        if len(handled) == 2:
            both.set()
        await release.wait()

    async def lease_until(message_id: int) -> float:
        row = await db.fetchone("SELECT lease_until FROM bus_messages WHERE id = ?", (message_id,))
        assert row is not None and row["lease_until"] is not None
        return float(row["lease_until"])

    working = asyncio.create_task(run_burst(Worker(bus, "in", long_job, concurrency=2, lease=lease)))
    try:
        async with asyncio.timeout(10):
            await both.wait()
            # The bus's clock moves on by several leases while both handlers work; after each step
            # the heartbeat must have renewed both leases from the new time.
            for _ in range(10):
                clock.now += lease * 2 / 3
                for message_id in ids:
                    while await lease_until(message_id) < clock.now + lease * 0.99:
                        await asyncio.sleep(0.01)  # the heartbeat runs on its own timer
                assert await bus.claim("in", owner="second", lease=lease) == []
    finally:
        release.set()
        await working
    assert sorted(handled) == ids
    assert [await bus.status(message_id) for message_id in ids] == ["done", "done"]


async def test_progress_of_a_message_survives_for_its_retry(bus: Bus) -> None:
    message_id = await publish(bus, "a long reply")
    assert await bus.progress(message_id) == 0
    await bus.set_progress(message_id, 2)
    await bus.set_progress(message_id, 3)
    assert await bus.progress(message_id) == 3


async def test_a_dead_letter_names_its_error_and_on_dead_is_told_which_message(db: Database) -> None:
    bus = Bus(db)
    told: list[tuple[int, str]] = []

    async def handler(delivery: Delivery) -> None:
        text = delivery.parse(InboundMessage).text
        raise Fatal(text) if text else Fatal()

    async def on_dead(delivery: Delivery, error: BaseException) -> None:
        told.append((delivery.id, type(error).__name__))

    with_reason = await publish(bus, "bad input", conversation="a")
    without = await publish(bus, "", conversation="b")
    await run_burst(Worker(bus, "in", handler, concurrency=2, on_dead=on_dead))
    assert sorted(told) == [(with_reason, "Fatal"), (without, "Fatal")]
    reasons = {letter["id"]: letter["last_error"] for letter in await bus.dead_letters("in")}
    # An error without a message is still named: the operator sees what went wrong.
    assert reasons == {with_reason: "Fatal: bad input", without: "Fatal"}


async def test_a_message_whose_workers_keep_dying_is_dead_lettered_saying_so(db: Database, clock: Clock) -> None:
    bus = Bus(db, clock=clock)
    message_id = await publish(bus, "kills its worker")
    for _ in range(3):  # three workers claim it and die: their leases run out
        assert [d.id for d in await bus.claim("in", owner="doomed", lease=30)] == [message_id]
        clock.now += 31
    handled: list[int] = []

    async def handler(delivery: Delivery) -> None:
        handled.append(delivery.id)

    await run_burst(Worker(bus, "in", handler, max_attempts=3))
    assert handled == []  # a fourth run would likely kill this worker too
    [letter] = await bus.dead_letters("in")
    assert letter["id"] == message_id
    assert letter["last_error"] == "LeaseExpired: its worker stopped 3 times while handling it"


async def test_retries_back_off_exponentially_with_jitter_up_to_the_cap_and_keep_the_error(
    db: Database, clock: Clock
) -> None:
    bus = Bus(db, clock=clock)
    message_id = await publish(bus, "flaky")
    failed = asyncio.Event()

    async def handler(delivery: Delivery) -> None:
        failed.set()
        if delivery.attempts == 1:
            raise Retry(reason="model busy")  # the worker's backoff, with the handler's reason
        raise ValueError(f"attempt {delivery.attempts}")

    async def retry_row() -> tuple[float, str]:
        while True:
            row = await db.fetchone(
                "SELECT status, available_at, last_error FROM bus_messages WHERE id = ?", (message_id,)
            )
            assert row is not None
            if row["status"] == "pending":
                return float(row["available_at"]) - clock.now, str(row["last_error"])
            await asyncio.sleep(0.01)

    worker = Worker(bus, "in", handler, max_attempts=7, backoff=1.0, backoff_max=5.0, poll_interval=0.01)
    running = asyncio.create_task(worker.run())
    delays: list[float] = []
    errors: list[str] = []
    try:
        async with asyncio.timeout(20):
            for _ in range(6):
                await failed.wait()
                failed.clear()
                delay, error = await retry_row()
                delays.append(delay)
                errors.append(error)
                clock.now += delay + 0.001  # due now: the worker claims it on its next poll
    finally:
        await worker.stop(0)
        await running
    # 1 s, 2 s, 4 s, then capped at 5 s; each scaled by a jitter in [0.5, 1].
    for delay, ceiling in zip(delays, [1, 2, 4, 5, 5, 5], strict=True):
        assert ceiling * 0.5 - 1e-6 <= delay <= ceiling + 1e-6
    assert errors == ["Retry: model busy", *(f"ValueError: attempt {n}" for n in range(2, 7))]


async def test_a_stopped_worker_has_released_its_message_when_stop_returns(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    bus = Bus(db)
    started = asyncio.Event()

    async def stuck(delivery: Delivery) -> None:
        started.set()
        await asyncio.Event().wait()

    message_id = await publish(bus, "long job")
    worker = Worker(bus, "in", stuck)
    running = asyncio.create_task(worker.run())
    await asyncio.wait_for(started.wait(), timeout=5)
    await worker.stop(grace=0.01)
    # The process may exit right after stop(): the message must be free now, not after its lease.
    assert await bus.status(message_id) == "pending"
    await running
    # An ordinary shutdown is not an error: nothing alarming in the operator's log.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


async def test_run_returns_only_after_the_handler_in_flight_at_stop_has_finished(db: Database) -> None:
    bus = Bus(db)
    started, release = asyncio.Event(), asyncio.Event()

    async def handler(delivery: Delivery) -> None:
        started.set()
        await release.wait()

    message_id = await publish(bus, "in flight")
    worker = Worker(bus, "in", handler)
    running = asyncio.create_task(worker.run())
    await asyncio.wait_for(started.wait(), timeout=5)
    stopping = asyncio.create_task(worker.stop(grace=30))
    # Whoever awaits run() for a shutdown relies on the work in flight being finished by then.
    done, _ = await asyncio.wait({running}, timeout=0.5)
    assert not done
    release.set()
    await asyncio.wait_for(asyncio.gather(running, stopping), timeout=10)
    assert await bus.status(message_id) == "done"


async def test_draining_waits_for_a_message_that_comes_due_within_the_grace(db: Database) -> None:
    bus = Bus(db)
    handled: list[str] = []

    async def handler(delivery: Delivery) -> None:
        handled.append(delivery.parse(InboundMessage).text)

    await publish(bus, "soon", delay=0.2)  # a retry's short backoff
    worker = Worker(bus, "in", handler, poll_interval=3600)
    running = asyncio.create_task(worker.run())
    await asyncio.wait_for(worker.drain(30), timeout=10)
    await running
    assert handled == ["soon"]


async def test_draining_releases_a_handler_still_running_when_the_grace_is_up(db: Database) -> None:
    bus = Bus(db)
    started = asyncio.Event()

    async def stuck(delivery: Delivery) -> None:
        started.set()
        await asyncio.Event().wait()

    message_id = await publish(bus, "never ends")
    worker = Worker(bus, "in", stuck)
    running = asyncio.create_task(worker.run())
    await asyncio.wait_for(started.wait(), timeout=5)
    loop = asyncio.get_running_loop()
    began = loop.time()
    await asyncio.wait_for(worker.drain(0.2), timeout=10)
    assert loop.time() - began < 0.2 + 0.9  # the grace is all a shutdown waits (not a second more)
    assert await bus.status(message_id) == "pending"
    await running


async def test_acking_nacking_and_dead_lettering_wake_listeners_of_the_topic_at_once(bus: Bus) -> None:
    ids = [await publish(bus, text, conversation=text) for text in ("a", "b", "c")]
    assert len(await bus.claim("in", owner="w", lease=30, limit=3)) == 3
    settlings = (lambda: bus.ack(ids[0]), lambda: bus.nack(ids[1]), lambda: bus.dead(ids[2], "Fatal"))
    for settle in settlings:
        # A waiter in this process (the terminal waiting for its reply, a worker) needs no poll.
        with bus.listen("in") as topic_changed, bus.listen() as anything_changed:
            assert await settle()
            assert topic_changed.is_set() and anything_changed.is_set()
    assert not await bus.nack(ids[0])  # already done: nothing to give back
    assert await bus.status(ids[0]) == "done"
    assert await bus.status(ids[-1] + 1) is None


async def test_a_change_inside_a_transaction_wakes_listeners_once_committed_and_never_if_rolled_back(
    bus: Bus, db: Database
) -> None:
    with bus.listen("in") as changed:
        async with db.transaction():
            published = await publish(bus, "kept")
            # Woken now, a worker would only wait for the commit, or find nothing if it rolled back.
            assert not changed.is_set()
        assert changed.is_set()
        assert await bus.status(published) == "pending"
        changed.clear()
        with pytest.raises(RuntimeError, match="undone"):
            async with db.transaction():
                await publish(bus, "rolled back", conversation="other")
                raise RuntimeError("undone")
        assert not changed.is_set()
    assert await bus.counts("in") == {"pending": 1}


async def test_waiting_on_a_topic_sees_its_changes_only_and_says_whether_one_came(bus: Bus) -> None:
    assert await bus.wait("in", timeout=0.01) is False
    waiting = asyncio.create_task(bus.wait("in", timeout=30))
    elsewhere = asyncio.create_task(bus.wait("other", timeout=30))
    await asyncio.sleep(0)  # let both waiters register their listeners
    await bus.publish("other", msg("elsewhere"), conversation="c1")
    assert await asyncio.wait_for(elsewhere, timeout=10) is True
    assert not waiting.done()  # woken with the other waiter if at all
    await publish(bus, "here")
    assert await asyncio.wait_for(waiting, timeout=10) is True


async def test_a_permanent_database_error_while_settling_ends_run_with_that_error(db: Database) -> None:
    bus = Bus(db)
    await publish(bus, "cannot be settled")

    async def handler(delivery: Delivery) -> None:
        # The database refuses to mark it done (another program's trigger): waiting cannot help.
        await db.execute(
            "CREATE TRIGGER refuse_done BEFORE UPDATE OF status ON bus_messages WHEN NEW.status = 'done' "
            "BEGIN SELECT RAISE(ABORT, 'done refused'); END"
        )

    with pytest.raises(sqlite3.IntegrityError, match="done refused"):
        await run_burst(Worker(bus, "in", handler))


async def test_a_claim_paused_past_its_lease_cannot_settle_or_renew_the_message_claimed_again(
    bus: Bus, clock: Clock
) -> None:
    message_id = await publish(bus, "hello")
    [first] = await bus.claim("in", owner="a", lease=30)
    clock.now += 31  # the first handler paused past its lease
    [second] = await bus.claim("in", owner="b", lease=30)
    assert (first.id, first.attempts, second.attempts) == (message_id, 1, 2)

    assert not await bus.extend(message_id, 30, attempt=first.attempts)
    assert not await bus.ack(message_id, attempt=first.attempts)
    assert not await bus.nack(message_id, attempt=first.attempts)
    assert not await bus.dead(message_id, "late", attempt=first.attempts)
    assert await bus.status(message_id) == "leased"
    assert await bus.ack(message_id, attempt=second.attempts)
    assert await bus.status(message_id) == "done"
