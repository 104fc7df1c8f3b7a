"""Each user message reaches the model stamped with the local time it was received; the stamp is
vaultbot's, not the user's words, so it never reaches the user or a note."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from bot.app import App
from bot.clock import stamp, stamped, unstamp
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import outbox, run_inbox
from tests.runner.conftest import send

BERLIN = ZoneInfo("Europe/Berlin")


def test_the_stamp_is_local_time_to_the_minute_with_the_offset_of_that_moment() -> None:
    assert stamp(datetime(2026, 11, 23, 13, 5, 59, tzinfo=UTC), BERLIN) == "[Mon 2026-11-23 14:05 +01:00]"
    # Just after midnight in Berlin it is still the day before in UTC: the stamp says the user's day.
    assert stamp(datetime(2026, 11, 23, 23, 30, tzinfo=UTC), BERLIN) == "[Tue 2026-11-24 00:30 +01:00]"
    # The hour that happens twice when the clocks go back reads twice, told apart by the offset.
    assert stamp(datetime(2026, 10, 25, 0, 30, tzinfo=UTC), BERLIN) == "[Sun 2026-10-25 02:30 +02:00]"
    assert stamp(datetime(2026, 10, 25, 1, 30, tzinfo=UTC), BERLIN) == "[Sun 2026-10-25 02:30 +01:00]"
    # The hour skipped in spring never shows.
    assert stamp(datetime(2026, 3, 29, 1, 0, tzinfo=UTC), BERLIN) == "[Sun 2026-03-29 03:00 +02:00]"
    assert stamp(datetime(2026, 1, 1, tzinfo=UTC), ZoneInfo("Asia/Kathmandu")) == "[Thu 2026-01-01 05:45 +05:45]"


def test_unstamp_takes_out_only_stamps_at_the_start_of_a_line() -> None:
    moment = datetime(2026, 11, 23, 13, 5, tzinfo=UTC)
    text = "buy oat milk\n[x] done\nsee [Mon 2026-11-23 14:05 +01:00] above"
    assert unstamp(stamped(text, moment, BERLIN)) == text
    assert unstamp(f"{stamp(moment, BERLIN)} one\n{stamp(moment, BERLIN)} two") == "one\ntwo"


@pytest.mark.parametrize("capture_to", ["inbox", "daily"])
async def test_in_capture_mode_the_note_and_the_log_hold_only_what_the_user_wrote(
    make_app: Callable[..., Awaitable[App]], capture_to: str
) -> None:
    app = await make_app(vault={"capture_to": capture_to})  # no API key: capture mode
    await send(app, "buy oat milk")
    await run_inbox(app)
    [note] = list(app.notes.root.rglob("*.md"))
    body = note.read_text()
    assert body.rstrip().endswith(" buy oat milk" if capture_to == "daily" else "\n\nbuy oat milk")
    assert "+0" not in body and "[" not in body
    [entry] = await app.store.list_interactions(limit=1)
    assert entry["summary"].endswith(": buy oat milk")


async def test_a_model_that_copies_the_stamp_does_not_show_it_or_file_it(
    make_app: Callable[..., Awaitable[App]], fake_anthropic: FakeAnthropic
) -> None:
    app = await make_app(
        anthropic_api_key="sk-ant-test",
        anthropic_base_url=fake_anthropic.base_url,
        model={"name": "claude-test", "sdk_max_retries": 0},
    )

    def copycat(body: dict[str, Any]) -> api.Canned:
        said = body["messages"][-1]["content"]
        if isinstance(said, str):  # the user's message, stamped: filed and answered word for word
            return api.tool_use(
                ("vault_write", {"folder": "Inbox", "title": said, "content": said}),
                ("send_message", {"text": said}),
            )
        return api.text("")

    fake_anthropic.handler = copycat
    message = await send(app, "remember the spare key is under the pot")
    await run_inbox(app)
    seen = fake_anthropic.requests[0].body["messages"][-1]["content"]
    assert seen == stamped("remember the spare key is under the pot", message.received_at, app.clock.tz)
    [note] = list(app.notes.root.rglob("*.md"))
    assert note.stem == "remember the spare key is under the pot"
    assert note.read_text().rstrip().endswith("\n\nremember the spare key is under the pot")
    assert [m.text for m in await outbox(app)] == ["remember the spare key is under the pot"]
