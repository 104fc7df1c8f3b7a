"""Long polling: an update is on the bus before Telegram is told it arrived, one that Telegram
delivers again is answered once, and one the bus cannot store is left with Telegram."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

from bot.bus import INBOUND
from bot.clock import unstamp
from tests.channels.telegram_harness import Serve, before_publish, echo
from tests.fakes import telegram_server as tg
from tests.fakes.scripted_model import ScriptedModel, say
from tests.fakes.telegram_server import FakeTelegram


def confirmed_past(update_id: int) -> Callable[[FakeTelegram], bool]:
    """Whether the fake was sent an offset that confirms ``update_id``."""
    return lambda fake: any(o is not None and o > update_id for o in fake.get_updates_offsets)


async def test_the_offset_never_confirms_an_update_before_it_is_on_the_bus(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    served = await serve(ScriptedModel(echo))
    fake: FakeTelegram = served.fake
    storing, stored = asyncio.Event(), asyncio.Event()

    async def slow_disk() -> None:
        storing.set()
        await stored.wait()

    first = 500
    before_publish(monkeypatch, served.app.bus, first, slow_disk)
    fake.push_update({**tg.text_update("first"), "update_id": first})
    fake.push_update(tg.text_update("second"))
    await asyncio.wait_for(storing.wait(), 10)
    # A channel that stored updates in the background would poll again at once, and that poll's
    # offset would tell Telegram the update is safe while it is not on disk.
    with pytest.raises(AssertionError, match="not true after"):
        await fake.await_for(confirmed_past(first), timeout=1.0)
    assert await served.app.bus.counts(INBOUND) == {}

    stored.set()
    await fake.await_for(lambda f: f.sent_texts == ["You said: first", "You said: second"])


async def test_an_update_telegram_delivers_again_is_handled_once(serve: Serve, monkeypatch: pytest.MonkeyPatch) -> None:
    model = ScriptedModel(echo)
    served = await serve(model)
    fake: FakeTelegram = served.fake
    update_id, stores = 500, 0

    async def count_and_stop() -> None:
        nonlocal stores
        stores += 1
        if stores == 1:
            # Stopped as it stores the update, the channel never polls again, so the offset that
            # would confirm it never reaches Telegram: as if the process died right after storing it.
            await served.channel.stop()

    before_publish(monkeypatch, served.app.bus, update_id, count_and_stop)
    fake.push_update({**tg.text_update("only once"), "update_id": update_id})
    await served.task
    assert stores == 1 and fake.confirmed_offset <= update_id  # unconfirmed: Telegram delivers it again

    await serve(app=served.app)  # the restart
    fake.push_update(tg.text_update("next"))
    await fake.await_for(lambda f: len(f.sent) == 2)
    assert stores == 2  # it did come twice
    assert fake.sent_texts == ["You said: only once", "You said: next"]
    assert await served.app.bus.counts(INBOUND) == {"done": 2}
    assert [unstamp(call[-1]["content"]) for call in model.calls] == ["only once", "next"]


async def test_an_update_the_bus_cannot_store_stays_with_telegram_and_polling_goes_on(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    served = await serve(ScriptedModel(lambda messages: say("Got it.")))
    fake, db = served.fake, served.app.db
    fake.push_update(tg.text_update("before the disk filled up"))
    await fake.await_for(lambda f: f.sent_texts == ["Got it."])
    # The disk is full: SQLite may not grow the file by a page, and a long message needs several.
    [(pages,)] = await db.fetchall("PRAGMA page_count")
    await db.fetchall(f"PRAGMA max_page_count = {pages}")
    update_id = fake.push_update(tg.text_update("a long thought " * 1000))

    def failures() -> list[logging.LogRecord]:
        return [r for r in caplog.records if "could not store update" in r.getMessage()]

    # Telegram delivered it again, and the channel tried again.
    await fake.await_for(lambda f: len(failures()) >= 2, timeout=20)
    assert served.task.done() is False  # still polling
    assert fake.confirmed_offset <= update_id  # never confirmed, so never lost
    assert await served.app.bus.counts(INBOUND) == {"done": 1}
    for record in failures():
        assert record.levelname == "WARNING" and record.exc_info is None  # one line, no traceback
        assert f"update {update_id}" in record.getMessage() and "database or disk is full" in record.getMessage()

    await db.fetchall("PRAGMA max_page_count = 1073741823")  # space freed
    await fake.await_for(lambda f: f.sent_texts == ["Got it.", "Got it."], timeout=30)
    assert await served.app.bus.counts(INBOUND) == {"done": 2}
    assert fake.confirmed_offset > update_id
