"""A reply says where a note went: when a run wrote notes its reply does not name, the runner adds
one line naming them, from what the vault recorded (never what the model claimed). Real SDK, fake API."""

from __future__ import annotations

from bot.app import App
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import outbox, run_inbox
from tests.runner.conftest import send

DINNER = {"folder": "Inbox", "title": "Dinner", "content": "Dinner with Bob on Friday at 8."}


async def replies(app: App) -> list[str]:
    return [m.text for m in await outbox(app)]


async def test_a_reply_that_does_not_say_where_the_note_went_gets_a_line_that_does(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(api.tool_use(("vault_write", DINNER)), api.text("Done, I kept it for you."))
    await send(app, "remember dinner with Bob on Friday at 8")
    await run_inbox(app)

    assert (app.notes.root / "Inbox" / "Dinner.md").is_file()
    assert await replies(app) == ["Done, I kept it for you.\n\nSaved to Inbox/Dinner.md."]
    [run] = await app.store.list_runs()
    assert run["final_text"] == "Done, I kept it for you."  # the model's words stay its own in the trail


async def test_a_reply_that_names_the_note_is_left_as_it_is(app: App, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(
        api.tool_use(("vault_write", DINNER), ("vault_write", {**DINNER, "title": "Bob"})),
        api.text("Kept in [[Dinner]], and Bob's note is at Inbox/Bob.md."),
    )
    await send(app, "remember dinner with Bob, and a note about Bob")
    await run_inbox(app)

    assert await replies(app) == ["Kept in [[Dinner]], and Bob's note is at Inbox/Bob.md."]


async def test_only_notes_this_run_wrote_are_named_and_the_ones_it_did_not_name_are_added(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    (app.notes.root / "Inbox").mkdir(parents=True, exist_ok=True)
    fake_anthropic.enqueue(
        api.tool_use(
            ("vault_write", DINNER),
            ("vault_write", {**DINNER, "title": "Wine", "content": "Bring wine."}),
            ("vault_write", {"folder": "../outside", "title": "Escape", "content": "x"}),  # refused: written nowhere
            ("vault_read", {"path": "Inbox/Dinner.md"}),
        ),
        api.text("I saved Inbox/Dinner.md, Inbox/Escape.md and a reminder."),  # one claim is false
    )
    await send(app, "remember dinner, the wine, and something outside")
    await run_inbox(app)

    # Only the note it wrote but did not name is added; the one it claimed but never wrote is not.
    assert await replies(app) == ["I saved Inbox/Dinner.md, Inbox/Escape.md and a reminder.\n\nSaved to Inbox/Wine.md."]


async def test_a_run_that_wrote_nothing_replies_as_the_model_did(app: App, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(api.tool_use(("vault_list", {"folder": ""})), api.text("Your vault is empty."))
    await send(app, "what is in my vault?")
    await run_inbox(app)

    assert await replies(app) == ["Your vault is empty."]
