"""Stopping `serve` (what `vaultbot run` does on Ctrl-C): a reply that cannot go out before the
grace period ends is released, not lost, and the next start sends it once."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from bot.app import App
from bot.cli.serve import serve
from tests.channels.telegram_harness import bus_statuses, echo
from tests.fakes import telegram_server as tg
from tests.fakes.scripted_model import ScriptedModel
from tests.fakes.telegram_server import FakeTelegram


async def test_a_reply_telegram_has_not_taken_when_the_grace_ends_is_sent_once_on_the_next_start(
    make_app: Callable[..., Awaitable[App]], fake: FakeTelegram
) -> None:
    model = ScriptedModel(echo)
    app = await make_app(model, telegram=fake.settings())
    fake.fail_next("sendMessage", 502, "Bad Gateway")  # the reply's first send fails: retried after a backoff
    stop = asyncio.Event()
    serving = asyncio.create_task(serve(app, stop, announce=lambda url: None, grace=0))
    fake.push_update(tg.text_update("hello"))
    await fake.await_for(lambda f: len(f.calls("sendMessage")) == 1)
    stop.set()  # no time left to retry it
    await asyncio.wait_for(serving, 30)
    assert fake.sent_texts == []
    assert bus_statuses(app.db.path, "outbound:telegram") == ["pending"]  # released, not lost

    stop = asyncio.Event()
    serving = asyncio.create_task(serve(app, stop, announce=lambda url: None, grace=10))
    await fake.await_for(lambda f: f.sent_texts == ["You said: hello"])
    stop.set()
    await asyncio.wait_for(serving, 30)
    assert fake.sent_texts == ["You said: hello"]  # once
    assert len(model.calls) == 1  # and the message was not run again
    assert bus_statuses(app.db.path, "inbound") == ["done"]
    assert bus_statuses(app.db.path, "outbound:telegram") == ["done"]
