"""Reminders over Telegram: set by the model in a chat, fired into that chat, listed and cancelled there."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

from tests.channels.telegram_harness import Serve
from tests.fakes import telegram_server as tg
from tests.fakes.scripted_model import ScriptedModel, call, say


async def test_a_reminder_set_in_a_telegram_chat_fires_into_it_and_only_its_owner_sees_it(serve: Serve) -> None:
    model = ScriptedModel()
    served = await serve(model, allowed_users=[42, 7])
    app = served.app
    due = (datetime.now(app.clock.tz) + timedelta(seconds=2)).replace(microsecond=0, tzinfo=None)
    model.enqueue(
        call(("schedule_message", {"text": "call the plumber", "at": due.isoformat(), "recipient": "7"})),
        say("Will do."),
    )
    scheduler = asyncio.create_task(app.scheduler.run())
    try:
        served.fake.push_update(tg.text_update("remind me in 2 seconds to call the plumber"))
        await served.fake.await_for(lambda f: "Will do." in f.sent_texts)
        served.fake.push_update(tg.text_update("/reminders", user_id=7))
        await served.fake.await_for(lambda f: "No reminders pending." in f.sent_texts)
        await served.fake.await_for(lambda f: "⏰ call the plumber" in f.sent_texts, timeout=20)
    finally:
        await app.scheduler.stop()
        await scheduler
    fired = [s for s in served.fake.sent if s.get("text") == "⏰ call the plumber"]
    assert [str(s["chat_id"]) for s in fired] == ["42"]
