"""/reminders and /cancel: the asking conversation's reminders, without the model."""

from __future__ import annotations

import asyncio

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from tests.helpers import outbox, run_inbox
from tests.reminders.conftest import Dial, context_of


async def ask(app: App, text: str, user: str = "ann") -> str:
    before = len(await outbox(app))
    message = InboundMessage(channel="terminal", conversation=f"terminal:{user}", sender=Sender(id=user), text=text)
    await app.bus.publish(INBOUND, message, conversation=message.conversation)
    await run_inbox(app)
    return "\n".join(m.text for m in (await outbox(app))[before:])


async def test_reminders_lists_in_local_time_and_cancel_takes_the_same_id(app: App, dial: Dial) -> None:
    tools = app.handler._dispatcher
    made = await tools.call(
        "schedule_message",
        {"text": "weekly review", "at": "2026-11-30T08:00", "repeat": "FREQ=WEEKLY;BYDAY=MO"},
        context_of("ann"),
    )
    reminder_id = made.result["id"]
    listing = await ask(app, "/reminders")
    assert f"{reminder_id} — Mon 2026-11-30 08:00 CET: weekly review (repeats FREQ=WEEKLY;BYDAY=MO)" in listing
    assert await ask(app, "/reminders", user="bob") == "No reminders pending."
    assert "no pending reminder" in await ask(app, f"/cancel {reminder_id}", user="bob")
    assert await ask(app, f"/cancel {reminder_id}") == f"Cancelled {reminder_id}: weekly review"
    assert await ask(app, "/reminders") == "No reminders pending."
    assert "Usage" in await ask(app, "/cancel")


async def test_a_pending_reminder_does_not_hold_back_the_conversations_messages(app: App) -> None:
    tools = app.handler._dispatcher
    made = await tools.call("schedule_message", {"text": "next year", "at": "2027-11-23T09:00"}, context_of("ann"))
    assert made.result["success"]
    reply = await asyncio.wait_for(ask(app, "/note buy oat milk"), 10)
    assert reply.startswith("Saved to")
