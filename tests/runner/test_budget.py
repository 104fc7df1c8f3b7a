"""The daily budget on an injected clock: once today's spend reaches the cap, messages are filed in
capture mode (no model call) until midnight in the user's zone; each conversation is told once a
day; commands keep working; nothing is lost."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from bot.clock import Clock
from bot.runner import ModelReply, Usage
from tests.conftest import make_settings
from tests.fakes.scripted_model import ScriptedModel
from tests.helpers import outbox, run_inbox

BERLIN = ZoneInfo("Europe/Berlin")
# claude-sonnet-5 input is $2 per million tokens: one such call costs $0.20.
CALL_COST = 0.20


class Now:
    """A wall clock the test sets by hand."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at

    def local(self, *args: int) -> None:
        """Set the time to a local time in Berlin."""
        self.at = datetime(*args, tzinfo=BERLIN).astimezone(UTC)  # type: ignore[misc]


def answer(messages: list[dict[str, Any]]) -> ModelReply:
    return ModelReply(
        [{"type": "text", "text": "answered by the model"}], "end_turn", Usage(100_000, 0), "claude-sonnet-5"
    )


OpenApp = Callable[..., Awaitable[App]]


@pytest.fixture
async def open_app(tmp_path: Path) -> AsyncIterator[OpenApp]:
    opened: list[App] = []

    async def factory(model: ScriptedModel, now: Now, daily_usd: float | None = CALL_COST, **more: Any) -> App:
        settings = make_settings(tmp_path, budget={"daily_usd": daily_usd}, timezone="Europe/Berlin", **more)
        app = await App.open(settings, model=model, clock=Clock(BERLIN, now))
        opened.append(app)
        return app

    yield factory
    for app in opened:
        await app.close()


async def say(app: App, text: str, conversation: str = "terminal:ann") -> list[tuple[str, str]]:
    """Send one message through the runner; the (kind, text) of what it queued for the user."""
    before = len(await outbox(app))
    message = InboundMessage(channel="terminal", conversation=conversation, sender=Sender(id="ann"), text=text)
    await app.bus.publish(INBOUND, message, conversation=conversation)
    await run_inbox(app)
    return [(m.kind, m.text) for m in (await outbox(app))[before:]]


async def test_spend_reaching_the_budget_at_2350_files_messages_until_midnight(open_app: OpenApp) -> None:
    model, now = ScriptedModel(answer), Now(datetime.now(UTC))
    app = await open_app(model, now)

    now.local(2030, 1, 15, 23, 50)
    assert await say(app, "what is on my list?") == [("reply", "answered by the model")]
    assert len(model.calls) == 1

    now.local(2030, 1, 15, 23, 55)
    told = await say(app, "buy oat milk")
    assert len(model.calls) == 1, "over budget, the model is not called"
    assert told[0][0] == "notice"
    assert "$0.20" in told[0][1] and "00:00 on Wed 16 Jan (Europe/Berlin)" in told[0][1]
    assert told[1] == ("reply", "Saved to Inbox/buy oat milk.md in your vault.")
    assert "oat milk" in (app.notes.root / "Inbox" / "buy oat milk.md").read_text()
    [run] = await app.store.list_runs(limit=1)
    assert run["mode"] == "capture" and run["status"] == "completed"

    now.local(2030, 1, 15, 23, 59, 59)
    assert await say(app, "and bread") == [("reply", "Saved to Inbox/and bread.md in your vault.")]

    now.local(2030, 1, 16, 0, 0)
    assert await say(app, "good morning") == [("reply", "answered by the model")]
    assert len(model.calls) == 2


async def test_each_conversation_is_told_once_a_day(open_app: OpenApp) -> None:
    model, now = ScriptedModel(answer), Now(datetime.now(UTC))
    app = await open_app(model, now)
    now.local(2030, 1, 15, 10, 0)
    await say(app, "spend it all")
    notices = []
    for conversation in ("terminal:ann", "terminal:bob", "terminal:ann", "terminal:bob"):
        notices += [text for kind, text in await say(app, "a thought", conversation) if kind == "notice"]
    assert len(notices) == 2

    now.local(2030, 1, 16, 9, 0)
    await say(app, "a new day's spending")  # the model answers and spends the new day's budget
    told = [kind for kind, _ in await say(app, "another thought")]
    assert told == ["notice", "reply"]
    assert len(model.calls) == 2


async def test_commands_still_work_over_budget_and_status_shows_the_spend(open_app: OpenApp) -> None:
    model, now = ScriptedModel(answer), Now(datetime.now(UTC))
    app = await open_app(model, now)
    now.local(2030, 1, 15, 10, 0)
    await say(app, "spend it all")
    [(kind, status)] = await say(app, "/status")
    assert kind == "reply"
    assert "$0.20 spent of $0.20 today; resets at 00:00 on Wed 16 Jan (Europe/Berlin)" in status
    assert "filed without the assistant" in status
    await say(app, "/note call the plumber")
    [(_, found)] = await say(app, "/find plumber")
    assert "call the plumber" in found
    assert len(model.calls) == 1


@pytest.mark.parametrize(
    ("last_evening", "after_midnight"),
    [
        # 29 March 2026: clocks go forward at 02:00, the day has 23 hours; midnight is 22:00 UTC.
        ((2026, 3, 29, 23, 30), (2026, 3, 30, 0, 10)),
        # 25 October 2026: clocks go back at 03:00, the day has 25 hours; midnight is 23:00 UTC.
        ((2026, 10, 25, 23, 30), (2026, 10, 26, 0, 10)),
    ],
)
async def test_the_budget_day_follows_the_zone_across_a_dst_change(
    open_app: OpenApp, last_evening: tuple[int, ...], after_midnight: tuple[int, ...]
) -> None:
    model, now = ScriptedModel(answer), Now(datetime.now(UTC))
    app = await open_app(model, now)
    now.local(*last_evening[:3], 1, 30)  # early on the DST day, before the change
    await say(app, "spend the day's budget")
    now.local(*last_evening)
    assert [kind for kind, _ in await say(app, "late thought")] == ["notice", "reply"]
    assert len(model.calls) == 1
    now.local(*after_midnight)
    assert await say(app, "early thought") == [("reply", "answered by the model")]


async def test_without_a_budget_the_model_answers_whatever_was_spent(open_app: OpenApp) -> None:
    model, now = ScriptedModel(answer), Now(datetime(2030, 1, 15, 9, 0, tzinfo=UTC))
    app = await open_app(model, now, daily_usd=None)
    for text in ("one", "two", "three"):
        assert await say(app, text) == [("reply", "answered by the model")]
    [(_, status)] = await say(app, "/status")
    assert "Spent today: $0.60 (no daily budget set)." in status


async def test_capture_mode_dates_the_daily_note_by_the_users_clock(tmp_path: Path) -> None:
    # 23:30 UTC on 22 November is already 12:30 on the 23rd in Auckland.
    settings = make_settings(tmp_path, vault={"capture_to": "daily"}, timezone="Pacific/Auckland")
    now = Now(datetime(2026, 11, 22, 23, 30, tzinfo=UTC))
    app = await App.open(settings, clock=Clock(ZoneInfo("Pacific/Auckland"), now))
    try:
        await say(app, "summer is here")
    finally:
        await app.close()
    note = (tmp_path / "vault" / "Daily" / "2026-11-23.md").read_text()
    assert "- 12:30 summer is here" in note


async def test_a_turn_that_crosses_the_budget_finishes_with_the_model(open_app: OpenApp) -> None:
    def costly_tool_call(messages: list[dict[str, Any]]) -> ModelReply:
        write = {"folder": "Notes", "title": "Plan", "content": "the plan"}
        blocks = [{"type": "tool_use", "id": f"toolu_{len(messages)}", "name": "vault_write", "input": write}]
        return ModelReply(blocks, "tool_use", Usage(100_000, 0), "claude-sonnet-5")

    model, now = ScriptedModel(answer), Now(datetime.now(UTC))
    model.enqueue(costly_tool_call([]))
    app = await open_app(model, now)
    now.local(2030, 1, 15, 12, 0)
    # The reply says where the note went (the model's did not).
    assert await say(app, "write the plan down") == [("reply", "answered by the model\n\nSaved to Notes/Plan.md.")]
    assert len(model.calls) == 2, "the budget was reached by the first call; the turn still finished"
    assert (app.notes.root / "Notes" / "Plan.md").exists()
    assert [kind for kind, _ in await say(app, "next thought")] == ["notice", "reply"]
    assert len(model.calls) == 2
