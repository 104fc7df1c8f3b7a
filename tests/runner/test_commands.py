"""Slash commands answered without the model, in capture mode and with a model."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from bot.runner import parse_command
from tests.fakes.scripted_model import ScriptedModel, say
from tests.helpers import outbox, run_inbox

AppFactory = Callable[..., Awaitable[App]]


async def send(app: App, *texts: str) -> list[str]:
    """Send lines in one conversation and return the replies they got."""
    before = len(await outbox(app))
    for text in texts:
        message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text=text)
        await app.bus.publish(INBOUND, message, conversation=message.conversation)
    await run_inbox(app)
    return [m.text for m in (await outbox(app))[before:]]


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("/note buy milk", ("note", "buy milk")),
        ("/find@vault_test_bot oat  milk", ("find", "oat  milk")),
        ("/HELP", ("help", "")),
        ("/note\nline one\nline two", ("note", "line one\nline two")),
        ("/unknown thing", ("unknown", "thing")),  # answered as an unknown command, not filed
        ("/bogus-cmd-zz", ("bogus-cmd-zz", "")),  # a command attempt too: a slash and a word
        ("/2fa codes", ("2fa", "codes")),
        ("/Bogus-Cmd@vault_test_bot now", ("bogus-cmd", "now")),
        ("/etc/hosts is odd", None),
        ("not /note", None),
        ("/", None),
        ("/ hello", None),
        ("//comment", None),
    ],
)
def test_commands_are_recognised(text: str, parsed: tuple[str, str] | None) -> None:
    command = parse_command(text)
    assert (None if command is None else (command.name, command.args)) == parsed


async def test_note_find_and_log_work_in_capture_mode(make_app: AppFactory) -> None:
    app = await make_app()
    [saved] = await send(app, "/note Call the plumber about the leak")
    assert saved == "Saved to Inbox/Call the plumber about the leak.md."
    assert (app.notes.root / "Inbox" / "Call the plumber about the leak.md").exists()
    [found] = await send(app, "/find plumber")
    assert "Inbox/Call the plumber about the leak.md" in found
    [nothing] = await send(app, "/find zeppelin")
    assert "Nothing in your notes matches" in nothing
    [logged] = await send(app, "/log")
    assert "Filed a note: Call the plumber about the leak" in logged
    [usage] = await send(app, "/note")
    assert usage.startswith("Usage: /note")
    [status] = await send(app, "/status")
    assert "Capture mode" in status


async def test_status_reports_the_run_before_it_in_the_users_zone(make_app: AppFactory) -> None:
    app = await make_app(timezone="Asia/Kathmandu")
    [first] = await send(app, "/status")
    assert "Last run" not in first  # nothing ran before it; it does not report itself as running
    await send(app, "buy oat milk")
    [status] = await send(app, "/status")
    assert "Last run: completed at " in status and "+0545" in status


async def test_new_starts_a_fresh_conversation_for_the_model(make_app: AppFactory) -> None:
    model = ScriptedModel(lambda messages: say(f"seen {len(messages)} messages"))
    app = await make_app(model)
    assert await send(app, "hello") == ["seen 1 messages"]
    assert await send(app, "again") == ["seen 3 messages"]
    [fresh] = await send(app, "/new")
    assert "fresh conversation" in fresh
    assert await send(app, "hello again") == ["seen 1 messages"]
    [help_text] = await send(app, "/help")
    assert "/note" in help_text and "Assistant mode" in help_text


async def test_an_unknown_command_of_any_length_is_named_short_and_filed_nowhere(make_app: AppFactory) -> None:
    app = await make_app()
    [reply] = await send(app, "/" + "x" * 100_000 + " and words")
    assert reply.startswith(f"I don't know the command /{'x' * 32}…, so I did nothing with that message.")
    assert len(reply) < 1_000
    assert not (app.notes.root / "Inbox").exists()
