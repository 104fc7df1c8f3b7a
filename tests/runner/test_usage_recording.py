"""Every model call is recorded with the model the API named, its tokens and its cost: the turn's
own calls and the audit summariser's, through the real SDK and a fake Messages API."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC
from typing import Any

import pytest

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import run_inbox
from tests.test_usage_cli import reported

AppFactory = Callable[..., Awaitable[App]]


async def test_the_turn_and_the_summariser_are_both_counted(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    app = await make_app(
        anthropic_api_key="sk-ant-test",
        anthropic_base_url=fake_anthropic.base_url,
        model={"name": "claude-sonnet-5", "summary_model": "claude-haiku-4-5", "sdk_max_retries": 0},
    )
    (app.notes.root / "Long.md").write_text("word " * 3000)
    script = iter(
        [
            reported(api.tool_use(("vault_read", {"path": "Long"})), "claude-sonnet-5", input_tokens=1_000_000),
            reported(api.text("A long note."), "claude-sonnet-5", output_tokens=100_000),
        ]
    )

    def answer(body: dict[str, Any]) -> api.Canned:
        if body["model"] == "claude-haiku-4-5":
            return reported(api.text("One word, repeated."), "claude-haiku-4-5-20251001", input_tokens=4000)
        return next(script)

    fake_anthropic.handler = answer
    message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="Long?")
    await app.bus.publish(INBOUND, message, conversation=message.conversation)
    await run_inbox(app)

    # Rows are named by the model asked for; the dated id the API answered with prices the call.
    rows = {row.model: row for row in await app.store.usage_by_day(None, UTC)}
    assert set(rows) == {"claude-sonnet-5", "claude-haiku-4-5"}
    # claude-sonnet-5: $2 per million input, $10 per million output; claude-haiku-4-5: $1 input.
    assert rows["claude-sonnet-5"].input_tokens == 1_000_000 and rows["claude-sonnet-5"].output_tokens == 100_000
    assert rows["claude-sonnet-5"].cost_usd == pytest.approx(2.0 + 1.0)
    assert rows["claude-haiku-4-5"].cost_usd == pytest.approx(0.004)
    assert await app.store.models_used() == [
        ("claude-haiku-4-5", "claude-haiku-4-5-20251001"),
        ("claude-sonnet-5", "claude-sonnet-5"),
    ]
    [run] = await app.store.list_runs()
    assert run["cost_usd"] == pytest.approx(3.004)
    assert await app.store.spend_today(UTC) == pytest.approx(3.004)


async def test_capture_mode_calls_no_model_and_costs_nothing(make_app: AppFactory) -> None:
    app = await make_app()
    message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="milk")
    await app.bus.publish(INBOUND, message, conversation=message.conversation)
    await run_inbox(app)
    assert await app.store.usage_by_day(None, UTC) == []
    [run] = await app.store.list_runs()
    assert run["mode"] == "capture" and run["cost_usd"] == 0.0
