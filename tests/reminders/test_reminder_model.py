"""The model schedules through the real SDK and runner. It learns the time from the stamp on each
of the user's messages (the local time the message was received, with its UTC offset), never from
the system prompt, and "in 10 minutes" comes out right across midnight and DST changes."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import outbox, run_inbox
from tests.reminders.conftest import Dial


async def on_claude(open_app: Callable[..., Awaitable[App]], fake: FakeAnthropic) -> App:
    return await open_app(
        anthropic_api_key="sk-ant-test",
        anthropic_base_url=fake.base_url,
        model={"name": "claude-test", "sdk_max_retries": 0},
    )


async def receive(app: App, text: str, at: datetime) -> None:
    """Ann's message, as the terminal channel receives it at ``at``."""
    message = InboundMessage(
        channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text=text, received_at=at
    )
    await app.bus.publish(INBOUND, message, conversation=message.conversation)


def sent_at(body: dict[str, Any]) -> datetime:
    """The time the newest user message carries, read as a model reads it."""
    text = body["messages"][-1]["content"]
    return datetime.strptime(text[: text.index("]") + 1], "[%a %Y-%m-%d %H:%M %z]")


async def test_the_model_reads_the_local_time_on_the_message_and_schedules_for_the_user(
    open_app: Callable[..., Awaitable[App]], fake_anthropic: FakeAnthropic, dial: Dial
) -> None:
    app = await on_claude(open_app, fake_anthropic)
    fake_anthropic.enqueue(
        api.tool_use(
            ("schedule_message", {"text": "call the plumber", "at": "2026-11-24T09:00", "recipient": "mallory"})
        ),
        api.text("I'll remind you tomorrow at 9:00."),
    )
    await receive(app, "remind me tomorrow at 9", dial())
    await run_inbox(app)
    first = fake_anthropic.requests[0].body
    assert first["messages"][-1]["content"] == "[Mon 2026-11-23 09:00 +01:00] remind me tomorrow at 9"
    system: list[dict[str, Any]] = first["system"]
    # The time zone is in the system prompt's cached prefix (the profile note's block, last, carries the breakpoint).
    assert any("The user's time zone is Europe/Berlin." in block["text"] for block in system[1:])
    assert system[-1]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in system[0]
    result = fake_anthropic.requests[1].body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "2026-11-24T09:00:00+01:00" in json.dumps(result["content"])
    dial.advance(days=1)
    await app.reminders.fire_due()
    fired = (await outbox(app))[-1]
    assert (fired.recipient, fired.text) == ("ann", "⏰ call the plumber")
    runs = await app.store.list_runs(limit=1)
    assert "schedule_message" in runs[0]["tools_called"]


async def test_the_system_prompt_stays_the_same_hours_later_and_the_message_keeps_its_receive_time(
    open_app: Callable[..., Awaitable[App]], fake_anthropic: FakeAnthropic, dial: Dial
) -> None:
    app = await on_claude(open_app, fake_anthropic)
    fake_anthropic.handler = lambda body: api.text("Noted.")
    await receive(app, "first", dial())
    dial.advance(hours=2, minutes=17)  # handled late (the bot was down): the stamp is still the receive time
    await run_inbox(app)
    await receive(app, "second", dial())
    await run_inbox(app)
    first, second = (r.body for r in fake_anthropic.requests)
    assert first["system"] == second["system"]  # nothing in the cached prefix moves with the clock
    assert [m["content"] for m in second["messages"] if m["role"] == "user"] == [
        "[Mon 2026-11-23 09:00 +01:00] first",
        "[Mon 2026-11-23 11:17 +01:00] second",
    ]
    assert second["messages"][0] == first["messages"][0]  # history as it was sent, so it stays cached


IN_TEN_MINUTES = {
    # where the message is received (UTC): the stamp the model reads, and the reminder's local time
    "midnight": (
        datetime(2026, 11, 23, 22, 55, tzinfo=UTC),
        "[Mon 2026-11-23 23:55 +01:00]",
        "2026-11-24T00:05:00+01:00",
    ),
    "spring forward": (
        datetime(2026, 3, 29, 0, 55, tzinfo=UTC),
        "[Sun 2026-03-29 01:55 +01:00]",
        "2026-03-29T03:05:00+02:00",
    ),
    "fall back, first 02:55": (
        datetime(2026, 10, 25, 0, 55, tzinfo=UTC),
        "[Sun 2026-10-25 02:55 +02:00]",
        "2026-10-25T02:05:00+01:00",
    ),
    "fall back, second 02:55": (
        datetime(2026, 10, 25, 1, 55, tzinfo=UTC),
        "[Sun 2026-10-25 02:55 +01:00]",
        "2026-10-25T03:05:00+01:00",
    ),
}


@pytest.mark.parametrize("case", list(IN_TEN_MINUTES))
async def test_in_ten_minutes_is_ten_minutes_after_the_message_across_midnight_and_dst(
    open_app: Callable[..., Awaitable[App]], fake_anthropic: FakeAnthropic, dial: Dial, case: str
) -> None:
    received, stamp, local = IN_TEN_MINUTES[case]
    dial.at = received
    app = await on_claude(open_app, fake_anthropic)

    def model(body: dict[str, Any]) -> api.Canned:
        if body["messages"][-1]["role"] == "user" and isinstance(body["messages"][-1]["content"], str):
            # What a model does with the stamp: add ten minutes, keep the offset it was given.
            at = (sent_at(body) + timedelta(minutes=10)).isoformat()
            return api.tool_use(("schedule_message", {"text": "take the cake out", "at": at}))
        return api.text("Will do.")

    fake_anthropic.handler = model
    await receive(app, "remind me in 10 minutes to take the cake out", dial())
    await run_inbox(app)
    assert fake_anthropic.requests[0].body["messages"][-1]["content"].startswith(stamp + " remind me")
    result = json.loads(fake_anthropic.requests[1].body["messages"][-1]["content"][0]["content"])
    assert result["success"] and result["next"] == local
    dial.advance(minutes=9, seconds=59)
    await app.reminders.fire_due()
    assert [m.text for m in await outbox(app)] == ["Will do."]  # not yet
    dial.advance(seconds=1)
    await app.reminders.fire_due()
    assert [m.text for m in await outbox(app)] == ["Will do.", "⏰ take the cake out"]
