"""The model schedules through the real SDK and runner: it is told the user's date, hour and zone."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import outbox, run_inbox
from tests.reminders.conftest import Dial


async def test_the_model_is_told_the_local_date_and_schedules_for_the_user(
    open_app: Callable[..., Awaitable[App]], fake_anthropic: FakeAnthropic, dial: Dial
) -> None:
    app = await open_app(
        anthropic_api_key="sk-ant-test",
        anthropic_base_url=fake_anthropic.base_url,
        model={"name": "claude-test", "sdk_max_retries": 0},
    )
    fake_anthropic.enqueue(
        api.tool_use(
            ("schedule_message", {"text": "call the plumber", "at": "2026-11-24T09:00", "recipient": "mallory"})
        ),
        api.text("I'll remind you tomorrow at 9:00."),
    )
    message = InboundMessage(
        channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="remind me tomorrow at 9"
    )
    await app.bus.publish(INBOUND, message, conversation=message.conversation)
    await run_inbox(app)
    system: list[dict[str, Any]] = fake_anthropic.requests[0].body["system"]
    assert "Monday 2026-11-23, between 09:00 and 10:00; time zone Europe/Berlin (UTC+01:00)" in system[-1]["text"]
    assert system[-1]["cache_control"] == {"type": "ephemeral"} and "cache_control" not in system[0]
    result = fake_anthropic.requests[1].body["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and "2026-11-24T09:00:00+01:00" in json.dumps(result["content"])
    dial.advance(days=1)
    await app.reminders.fire_due()
    fired = (await outbox(app))[-1]
    assert (fired.recipient, fired.text) == ("ann", "⏰ call the plumber")
    runs = await app.store.list_runs(limit=1)
    assert "schedule_message" in runs[0]["tools_called"]
