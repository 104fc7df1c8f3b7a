"""Scheduled tasks (``run_model``: a model call each time) repeat at most hourly, and a conversation
runs at most so many a day, however many tasks it has; the person is told once when the cap is hit."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bot.app import App
from bot.bus import INBOUND, InboundMessage, outbound_topic
from bot.tools import ToolContext
from tests.reminders.conftest import Dial, context_of


async def schedule(app: App, context: ToolContext, **input: object) -> dict[str, object]:
    outcome = await app.handler._dispatcher.call("schedule_message", input, context)  # noqa: SLF001
    return outcome.result


@pytest.mark.parametrize(
    "repeat", ["FREQ=MINUTELY", "FREQ=MINUTELY;INTERVAL=30", "FREQ=DAILY;BYHOUR=9,10;BYMINUTE=0,30"]
)
async def test_a_task_repeating_more_often_than_hourly_is_refused(app: App, repeat: str) -> None:
    context = context_of("ann")
    refused = await schedule(app, context, text="list my tasks", at="2026-11-23T10:00", repeat=repeat, run_model=True)
    assert refused["success"] is False and refused["error_type"] == "invalid_input"
    assert "run_model" in str(refused["error"]) and "once an hour" in str(refused["error"])
    assert await app.reminders.pending("terminal:ann") == []
    # The same rule without run_model is a plain reminder, allowed down to once a minute.
    plain = await schedule(app, context, text="stretch", at="2026-11-23T10:00", repeat=repeat, run_model=False)
    assert plain["success"] is True


async def test_an_hourly_task_is_allowed(app: App) -> None:
    done = await schedule(
        app, context_of("ann"), text="list my tasks", at="2026-11-23T10:00", repeat="FREQ=HOURLY", run_model=True
    )
    assert done["success"] is True


async def test_tasks_past_the_days_cap_are_skipped_and_the_person_told_once(
    open_app: Callable[..., Awaitable[App]], dial: Dial
) -> None:
    app = await open_app(reminders={"max_pending": 50, "model_runs_per_day": 3})
    context = context_of("ann")
    for n in range(5):  # five hourly tasks, all at 10:00: 120 model runs a day without the cap
        await schedule(app, context, text=f"task {n}", at="2026-11-23T10:00", repeat="FREQ=HOURLY", run_model=True)
    dial.advance(hours=1)  # 10:00 in Berlin
    await app.reminders.fire_due()
    dial.advance(hours=1)
    await app.reminders.fire_due()
    runs = await app.db.fetchall("SELECT payload FROM bus_messages WHERE topic = ?", (INBOUND,))
    assert len(runs) == 3 and all(InboundMessage.model_validate_json(r["payload"]).reminder for r in runs)
    told = await app.db.fetchall(
        "SELECT payload FROM bus_messages WHERE topic = ? AND payload LIKE '%skipped the scheduled task%'",
        (outbound_topic("terminal"),),
    )
    assert len(told) == 1 and "3 times in this chat today" in told[0]["payload"]
    logged = [i["summary"] for i in await app.store.list_interactions(limit=50)]
    assert sum(" fired: " in s for s in logged) == 3 and sum(" skipped: " in s for s in logged) == 7
    dial.advance(hours=23)  # the next day (in Berlin): the cap starts again
    await app.reminders.fire_due()
    runs = await app.db.fetchall("SELECT payload FROM bus_messages WHERE topic = ?", (INBOUND,))
    assert len(runs) == 6
