"""Scheduling, listing, cancelling and firing reminders through the tools, on a hand-set clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bot.app import App
from bot.bus import INBOUND, InboundMessage
from tests.helpers import outbox, run_inbox
from tests.reminders.conftest import Dial, context_of


async def schedule(app: App, user: str = "ann", inbound: str = "in-1", **input: Any) -> dict[str, Any]:
    outcome = await app.handler._dispatcher.call("schedule_message", input, context_of(user, inbound))
    return outcome.result


async def listed(app: App, user: str = "ann") -> list[dict[str, Any]]:
    outcome = await app.handler._dispatcher.call("list_scheduled", {}, context_of(user))
    assert outcome.result["success"], outcome.result
    return outcome.result["scheduled"]


async def cancel(app: App, reminder_id: str, user: str = "ann") -> dict[str, Any]:
    return (await app.handler._dispatcher.call("cancel_scheduled", {"id": reminder_id}, context_of(user))).result


async def test_a_reminder_is_scheduled_in_local_time_listed_and_fired_once(app: App, dial: Dial) -> None:
    made = await schedule(app, text="call the plumber", at="2026-11-24T09:00", recipient="mallory")
    assert made["success"] and made["next"] == "2026-11-24T09:00:00+01:00"
    assert await listed(app) == [
        {
            "id": made["id"],
            "text": "call the plumber",
            "next": "2026-11-24T09:00:00+01:00",
            "repeat": None,
            "run_model": False,
        }
    ]
    assert await app.reminders.fire_due() == 0
    dial.advance(hours=24)
    assert await app.reminders.fire_due() == 1
    assert await app.reminders.fire_due() == 0
    sent = await outbox(app)
    assert [(m.recipient, m.text) for m in sent] == [("ann", "⏰ call the plumber")]
    assert await listed(app) == []


async def test_scheduling_again_for_the_same_call_returns_the_same_reminder(app: App) -> None:
    first = await schedule(app, text="water the plants", at="2026-11-23T18:00")
    again = await schedule(app, text="water the plants", at="2026-11-23T18:00")  # a re-run of in-1's first call
    other = await schedule(app, inbound="in-2", text="water the plants", at="2026-11-23T18:00")
    assert again["id"] == first["id"] and other["id"] != first["id"]
    assert len(await listed(app)) == 2


async def test_another_conversation_can_neither_list_nor_cancel_it(app: App, dial: Dial) -> None:
    made = await schedule(app, text="private", at="2026-11-23T10:00")
    assert await listed(app, "bob") == []
    refused = await cancel(app, made["id"], user="bob")
    assert refused["success"] is False and refused["error_type"] == "not_found"
    dial.advance(hours=2)
    await app.reminders.fire_due()
    assert [m.recipient for m in await outbox(app)] == ["ann"]


async def test_cancelling_stops_it_and_a_second_cancel_is_not_found(app: App, dial: Dial) -> None:
    made = await schedule(app, text="stand up", at="2026-11-23T09:30")
    assert (await cancel(app, made["id"]))["success"] is True
    assert (await cancel(app, made["id"]))["error_type"] == "not_found"
    dial.advance(hours=1)
    assert await app.reminders.fire_due() == 0 and await outbox(app) == []


@pytest.mark.parametrize(
    ("input", "says"),
    [
        ({"text": "", "at": "2026-11-23T10:00"}, "empty"),
        ({"text": "   ", "at": "2026-11-23T10:00"}, "empty"),
        ({"text": "x", "at": "tomorrow at 9"}, "ISO 8601"),
        ({"text": "x", "at": "2026-11-23T08:58:30"}, "in the past"),
        ({"text": "x", "at": "2026-11-23T10:00", "repeat": "FREQ=SECONDLY"}, "once a minute"),
        ({"text": "x", "at": "2026-11-23T10:00", "repeat": "FREQ=MINUTELY;BYSECOND=0,30"}, "once a minute"),
        ({"text": "x", "at": "2026-11-23T10:00", "repeat": "FREQ=SOMETIMES"}, "not a valid RRULE"),
        ({"at": "2026-11-23T10:00"}, "text"),
    ],
)
async def test_bad_input_is_a_clear_failure_and_schedules_nothing(app: App, input: dict[str, Any], says: str) -> None:
    result = await schedule(app, **input)
    assert result["success"] is False and result["error_type"] == "invalid_input" and result["retryable"] is False
    assert says in result["error"]
    assert await listed(app) == []


async def test_up_to_a_minute_in_the_past_fires_at_once(app: App) -> None:
    made = await schedule(app, text="just now", at="2026-11-23T08:59:10")
    assert made["success"]
    assert await app.reminders.fire_due() == 1


async def test_a_user_has_at_most_the_configured_number_pending(app: App) -> None:
    for i in range(3):
        assert (await schedule(app, inbound=f"in-{i}", text=f"r{i}", at="2026-11-23T12:00"))["success"]
    refused = await schedule(app, inbound="in-9", text="one too many", at="2026-11-23T12:00")
    assert refused["success"] is False and refused["error_type"] == "limit_reached"
    assert (await schedule(app, user="bob", inbound="in-9", text="bob's own", at="2026-11-23T12:00"))["success"]


async def test_one_due_while_down_fires_once_on_start_and_says_how_late(app: App, dial: Dial) -> None:
    await schedule(app, text="take the cake out", at="2026-11-23T09:30")
    dial.advance(hours=3)  # the bot was down from 09:00 to 12:00
    assert await app.reminders.fire_due() == 1
    [sent] = await outbox(app)
    assert sent.text.startswith("⏰ take the cake out") and "2 h 30 min late" in sent.text


async def test_a_little_late_says_nothing_about_it(app: App, dial: Dial) -> None:
    await schedule(app, text="tea", at="2026-11-23T09:30")
    dial.advance(minutes=31)
    await app.reminders.fire_due()
    assert [m.text for m in await outbox(app)] == ["⏰ tea"]


async def test_a_recurring_one_that_missed_several_fires_once_then_resumes(app: App, dial: Dial) -> None:
    made = await schedule(app, text="stretch", at="2026-11-23T10:00", repeat="FREQ=DAILY")
    dial.advance(days=3, hours=2)  # 10:00 on the 23rd…26th all passed while down; now 11:00 on the 26th
    assert await app.reminders.fire_due() == 1
    [sent] = await outbox(app)
    assert "3 more occurrences missed" in sent.text
    assert (await listed(app))[0]["next"] == "2026-11-27T10:00:00+01:00"
    assert made["next"] == "2026-11-23T10:00:00+01:00"


async def test_a_recurring_one_fires_each_time_then_stops_after_cancel(app: App, dial: Dial) -> None:
    made = await schedule(app, text="drink water", at="2026-11-23T09:01", repeat="FREQ=MINUTELY;INTERVAL=5")
    for minutes in (1, 5):
        dial.advance(minutes=minutes)
        assert await app.reminders.fire_due() == 1
    await cancel(app, made["id"])
    dial.advance(minutes=30)
    assert await app.reminders.fire_due() == 0
    assert [m.text for m in await outbox(app)] == ["⏰ drink water", "⏰ drink water"]


async def test_two_instances_on_one_store_fire_each_occurrence_once(open_app: Any, dial: Dial) -> None:
    first, second = await open_app(), await open_app()
    await schedule(first, text="only once", at="2026-11-23T09:05", repeat="FREQ=MINUTELY;INTERVAL=10")
    for minutes in (5, 10, 10, 10, 10):
        dial.advance(minutes=minutes)
        await asyncio.gather(first.reminders.fire_due(), second.reminders.fire_due(), first.reminders.fire_due())
    assert [m.text for m in await outbox(first)] == ["⏰ only once"] * 5


async def test_run_model_hands_the_text_to_the_runner_as_from_the_user(app: App, dial: Dial) -> None:
    await schedule(app, text="list my open tasks", at="2026-11-23T09:10", run_model=True)
    dial.advance(minutes=10)
    await app.reminders.fire_due()
    rows = await app.db.fetchall("SELECT payload FROM bus_messages WHERE topic = ?", (INBOUND,))
    [message] = [InboundMessage.model_validate_json(r["payload"]) for r in rows]
    assert (message.conversation, message.sender.id, message.text) == ("terminal:ann", "ann", "list my open tasks")
    await run_inbox(app)  # capture mode (no key) files it like any message from the user
    runs = await app.store.list_runs(limit=5)
    assert [r["status"] for r in runs] == ["completed"]
    assert (app.settings.vault.path / "Inbox" / "list my open tasks.md").exists()


async def test_the_interaction_log_shows_set_fired_and_cancelled(app: App, dial: Dial) -> None:
    fired = await schedule(app, text="fired one", at="2026-11-23T09:10")
    dropped = await schedule(app, inbound="in-2", text="dropped one", at="2026-11-23T11:00")
    await cancel(app, dropped["id"])
    dial.advance(minutes=10)
    await app.reminders.fire_due()
    log = [e["summary"] for e in reversed(await app.store.list_interactions(limit=10))]
    assert log[0].startswith(f"Reminder {fired['id']} set for 2026-11-23T09:10:00+01:00")
    assert log[2] == f"Reminder {dropped['id']} cancelled: dropped one"
    assert log[3] == f"Reminder {fired['id']} fired: fired one"
