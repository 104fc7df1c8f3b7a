"""``/undo`` in a chat, through the real runner, bus, store and vault, with scripted turns."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from bot.store import short_id
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.scripted_model import ScriptedModel, call, say
from tests.helpers import outbox, run_inbox

AppFactory = Callable[..., Awaitable[App]]


async def send(app: App, *texts: str, conversation: str = "terminal:ann") -> list[str]:
    """Send lines in one conversation, one turn each, and return the replies they got."""
    before = len(await outbox(app))
    for text in texts:
        message = InboundMessage(channel="terminal", conversation=conversation, sender=Sender(id="ann"), text=text)
        await app.bus.publish(INBOUND, message, conversation=conversation)
        await run_inbox(app)
    return [m.text for m in (await outbox(app))[before:]]


def write(folder: str, title: str, content: str, **more: Any) -> tuple[str, dict[str, Any]]:
    return ("vault_write", {"folder": folder, "title": title, "content": content, **more})


async def latest_run(app: App) -> str:
    return str((await app.store.list_runs(limit=1))[0]["id"])


@pytest.fixture
async def model() -> ScriptedModel:
    return ScriptedModel()


@pytest.fixture
async def app(make_app: AppFactory, model: ScriptedModel) -> App:
    return await make_app(model)


async def test_undo_of_a_create_moves_the_note_to_the_trash(app: App, model: ScriptedModel) -> None:
    model.enqueue(call(write("Inbox", "Buy milk", "oat milk")), say("Saved."))
    await send(app, "buy oat milk")
    note = (app.notes.root / "Inbox/Buy milk.md").read_bytes()

    [told] = await send(app, "/undo")

    undo = await latest_run(app)
    assert told == (
        f"Undid run {short_id((await app.store.list_runs(limit=2))[1]['id'])}:\n"
        "• Inbox/Buy milk.md: moved to .trash/Inbox/Buy milk.md\n"
        f"`/undo {short_id(undo)}` puts it back."
    )
    assert not (app.notes.root / "Inbox/Buy milk.md").exists()
    assert (app.notes.root / ".trash/Inbox/Buy milk.md").read_bytes() == note
    assert app.notes.search("oat") == []


async def test_undo_of_an_append_takes_out_exactly_what_was_added(app: App, model: ScriptedModel) -> None:
    model.enqueue(call(write("Lists", "Groceries", "- eggs")), say("Saved."))
    await send(app, "groceries: eggs")
    before = (app.notes.root / "Lists/Groceries.md").read_bytes()
    model.enqueue(call(write("Lists", "Groceries", "- flour", mode="append", tags=["baking"])), say("Added."))
    await send(app, "and flour")
    assert b"flour" in (app.notes.root / "Lists/Groceries.md").read_bytes()

    [told] = await send(app, "/undo")

    assert "• Lists/Groceries.md: took out the added text" in told
    assert (app.notes.root / "Lists/Groceries.md").read_bytes() == before  # the tag it added went too


async def test_undo_of_a_replace_puts_the_previous_text_back(app: App, model: ScriptedModel) -> None:
    model.enqueue(call(write("Projects", "Shed", "Build it in spring.")), say("Saved."))
    await send(app, "shed: spring")
    before = (app.notes.root / "Projects/Shed.md").read_bytes()
    model.enqueue(
        call(("vault_read", {"path": "Projects/Shed"})),
        call(write("Projects", "Shed", "Build it in autumn.", mode="replace")),
        say("Replaced."),
    )
    await send(app, "make that autumn")

    [told] = await send(app, "/undo")

    assert "• Projects/Shed.md: put back its earlier text" in told
    assert (app.notes.root / "Projects/Shed.md").read_bytes() == before


async def test_each_undo_goes_one_run_further_back_and_a_named_one_in_the_middle(
    app: App, model: ScriptedModel
) -> None:
    for title in ("One", "Two", "Three"):
        model.enqueue(call(write("Inbox", title, f"note {title}")), say("Saved."))
        await send(app, f"note {title}")
    runs = [r["id"] for r in reversed(await app.store.list_runs(limit=3))]

    [middle] = await send(app, f"/undo {runs[1][:6]}")
    assert middle.startswith(f"Undid run {short_id(runs[1])}:\n• Inbox/Two.md: moved to")
    assert sorted(p.name for p in (app.notes.root / "Inbox").iterdir()) == ["One.md", "Three.md"]

    [latest] = await send(app, "/undo")
    assert latest.startswith(f"Undid run {short_id(runs[2])}:")
    [first] = await send(app, "/undo")  # the middle one is undone already: skipped
    assert first.startswith(f"Undid run {short_id(runs[0])}:")
    [nothing] = await send(app, "/undo")
    assert nothing.startswith("Nothing to undo")
    assert list((app.notes.root / "Inbox").iterdir()) == []
    [again] = await send(app, f"/undo {runs[1]}")
    assert again.startswith(f"Run {short_id(runs[1])} is already undone, by run ")


async def test_undoing_an_undo_redoes_it(app: App, model: ScriptedModel) -> None:
    model.enqueue(call(write("Inbox", "Keep me", "after all")), say("Saved."))
    await send(app, "keep me")
    note = (app.notes.root / "Inbox/Keep me.md").read_bytes()
    await send(app, "/undo")
    undo = await latest_run(app)

    [redone] = await send(app, f"/undo {undo[:8]}")

    assert redone.startswith(f"Undid run {short_id(undo)} (an undo of run ")
    assert "• Inbox/Keep me.md: put back from .trash" in redone
    assert (app.notes.root / "Inbox/Keep me.md").read_bytes() == note
    assert not (app.notes.root / ".trash/Inbox/Keep me.md").exists()
    # The run is no longer undone, so a bare /undo takes it back again.
    [again] = await send(app, "/undo")
    assert "• Inbox/Keep me.md: moved to .trash/Inbox/Keep me.md" in again


async def test_a_note_edited_on_disk_since_is_left_and_the_rest_undone(app: App, model: ScriptedModel) -> None:
    model.enqueue(
        call(write("Inbox", "Plumber", "call on Monday"), write("Inbox", "Groceries", "eggs")), say("Saved both.")
    )
    await send(app, "plumber monday, and eggs")
    edited = (app.notes.root / "Inbox/Plumber.md").read_text() + "He said Tuesday works better.\n"
    (app.notes.root / "Inbox/Plumber.md").write_text(edited)

    [told] = await send(app, "/undo")

    assert "• Inbox/Groceries.md: moved to .trash/Inbox/Groceries.md" in told
    assert (
        "Left as it is:\n• Inbox/Plumber.md: "
        "it was edited since (1 line added, 0 removed: “He said Tuesday works better.”)" in told
    )
    assert (app.notes.root / "Inbox/Plumber.md").read_text() == edited


async def test_a_note_changed_by_a_later_run_is_named_with_that_run(app: App, model: ScriptedModel) -> None:
    model.enqueue(call(write("Daily", "Monday", "- coffee")), say("Saved."))
    await send(app, "coffee")
    first = await latest_run(app)
    model.enqueue(call(write("Daily", "Monday", "- standup", mode="append")), say("Added."))
    await send(app, "standup")
    later = await latest_run(app)

    [told] = await send(app, f"/undo {first}")

    head, left = told.split("\n• ")
    assert head == f"Nothing of run {short_id(first)} was taken back.\nLeft as it is:"
    # The later run's front matter stamp may have moved on a second too: only the start and end are fixed.
    assert left.startswith("Daily/Monday.md: it was edited since (")
    assert left.endswith(f"), by run {short_id(later)}")
    assert (app.notes.root / "Daily/Monday.md").exists()


async def test_an_undo_is_logged_and_recorded_as_a_run(app: App, model: ScriptedModel) -> None:
    model.enqueue(call(write("Inbox", "Logged", "x")), say("Saved."))
    await send(app, "x")
    target = await latest_run(app)
    await send(app, "/undo")
    undo = await latest_run(app)

    [entry] = [e for e in await app.store.list_interactions() if e["category"] == "undo"]
    assert entry["run_id"] == undo
    assert entry["summary"] == f"Undid run {short_id(target)}: 1 of 1 changes taken back."
    run = await app.store.get_run(undo)
    assert run is not None and (run["status"], run["model"], run["mode"]) == ("completed", "/undo", "command")


async def test_capture_mode_and_note_command_can_be_undone(make_app: AppFactory) -> None:
    app = await make_app()  # no API key: capture mode
    await send(app, "remember the passport")
    await send(app, "/note call the bank")
    inbox = app.notes.root / "Inbox"
    assert sorted(p.name for p in inbox.iterdir()) == ["call the bank.md", "remember the passport.md"]

    [note] = await send(app, "/undo")
    [capture] = await send(app, "/undo")

    assert "• Inbox/call the bank.md: moved to" in note
    assert "• Inbox/remember the passport.md: moved to" in capture
    assert list(inbox.iterdir()) == []


async def test_a_run_of_another_chat_cannot_be_named(app: App, model: ScriptedModel) -> None:
    model.enqueue(call(write("Inbox", "Theirs", "not yours")), say("Saved."))
    await send(app, "theirs", conversation="telegram:99")
    theirs = await latest_run(app)

    [told] = await send(app, f"/undo {theirs}")

    assert told == f"No run in this chat has an id starting with {theirs!r}."
    assert (app.notes.root / "Inbox/Theirs.md").exists()


@pytest.mark.parametrize(
    ("args", "answer"),
    [
        ("abc", "'abc' is too short to name a run: give at least 6 characters of its id."),
        ("../../etc/passwd", "No run in this chat has an id starting with '../../etc/passwd'."),
        ("zzzzzzzz\x00", "No run in this chat has an id starting with 'zzzzzzzz\\x00'."),
        ("x" * 10_000, None),
    ],
)
async def test_hostile_run_ids_get_a_clear_answer(app: App, args: str, answer: str | None) -> None:
    [told] = await send(app, f"/undo {args}")
    if answer is not None:
        assert told == answer
    else:
        assert told.startswith("No run in this chat has an id starting with 'xxxx")
    assert not (app.notes.root / ".trash").exists()


async def test_nothing_to_undo(app: App) -> None:
    [told] = await send(app, "/undo")
    assert told == "Nothing to undo: no earlier run of this chat changed the vault (or it is undone already)."


async def test_a_note_written_before_the_model_failed_is_undone_with_its_message(
    on_claude: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    app = await on_claude()
    note = ("vault_write", {"folder": "Inbox", "title": "Dentist", "content": "book for May"})
    # The first attempt writes the note, then the API fails; the retry finds the note written already.
    fake_anthropic.enqueue(api.tool_use(note), api.status(500), api.tool_use(note), api.text("Saved."))
    replies = await send(app, "book the dentist for May")
    assert replies[-1] == "Saved."  # after a notice that the model could not be reached
    statuses = [r["status"] for r in await app.store.list_runs(limit=5)]
    assert statuses.count("failed") == 1 and statuses[0] == "completed"

    [told] = await send(app, "/undo")

    assert "• Inbox/Dentist.md: moved to .trash/Inbox/Dentist.md" in told
    assert not (app.notes.root / "Inbox/Dentist.md").exists()
