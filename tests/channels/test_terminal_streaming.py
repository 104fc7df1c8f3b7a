"""`vaultbot chat` at a terminal prints a reply as it is written, once; piped, it prints exactly
what it always did. The real runner, bus, store and vault, with a scripted model that streams."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable

from bot.app import App
from bot.bus import OutboundMessage, outbound_topic
from bot.channels.terminal import CHANNEL, TerminalChannel
from bot.cli.chat import chat
from bot.runner import ModelReply, Usage
from tests.fakes.scripted_model import ScriptedModel, call, say

ANSWER = "Hello there, friend.\n\nA second paragraph."
PRINTED = "vaultbot> Hello there, friend.\n          \n          A second paragraph.\n"


class Screen(io.StringIO):
    """Standard output at a terminal: every write kept, as the user sees them arrive."""

    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty
        self.writes: list[str] = []

    def isatty(self) -> bool:
        return self.tty

    def write(self, text: str) -> int:
        self.writes.append(text)
        return super().write(text)


async def talk(make_app: Callable[..., Awaitable[App]], model: ScriptedModel, *, tty: bool) -> Screen:
    app = await make_app(model)
    screen = Screen(tty)
    await chat(app, io.StringIO("hi\n"), screen, interactive=tty)
    return screen


async def test_at_a_terminal_the_reply_appears_as_it_is_written_and_only_once(
    make_app: Callable[..., Awaitable[App]],
) -> None:
    model = ScriptedModel()
    model.enqueue(say(ANSWER))
    screen = await talk(make_app, model, tty=True)
    assert screen.getvalue() == PRINTED
    assert len([w for w in screen.writes if w.strip()]) >= len(ANSWER.split())  # word by word


async def test_piped_output_is_unchanged(make_app: Callable[..., Awaitable[App]]) -> None:
    model = ScriptedModel()
    model.enqueue(say(ANSWER))
    screen = await talk(make_app, model, tty=False)
    assert screen.writes == [PRINTED]  # one write of the whole reply, as before streaming


async def test_text_before_a_tool_call_stays_on_its_own_line_and_the_reply_follows(
    make_app: Callable[..., Awaitable[App]],
) -> None:
    write = {"type": "tool_use", "id": "toolu_x", "name": "log_interaction", "input": {"summary": "said hi"}}
    model = ScriptedModel()
    model.enqueue(ModelReply([{"type": "text", "text": "Let me note that."}, write], "tool_use", Usage()), say("Done."))
    screen = await talk(make_app, model, tty=True)
    assert screen.getvalue() == "vaultbot> Let me note that.\nvaultbot> Done.\n"
    piped = ScriptedModel()
    piped.enqueue(ModelReply([{"type": "text", "text": "Let me note that."}, write], "tool_use", Usage()), say("Done."))
    assert (await talk(make_app, piped, tty=False)).getvalue() == "vaultbot> Done.\n"


async def test_a_reply_printed_from_the_outbox_is_not_printed_again_by_its_late_draft(
    make_app: Callable[..., Awaitable[App]],
) -> None:
    app = await make_app(ScriptedModel())
    screen = Screen(tty=True)
    channel = TerminalChannel(app.bus, screen, user="ann", progress=app.progress)
    writer = app.progress.open(key="m1", channel=CHANNEL, conversation=channel.conversation, recipient="ann")
    assert writer is not None
    writer.text("Hello there.")
    writer.end()
    reply = OutboundMessage(
        channel=CHANNEL, conversation=channel.conversation, recipient="ann", text="Hello there.", in_reply_to="m1"
    )
    await app.bus.publish(outbound_topic(CHANNEL), reply, conversation=channel.conversation)
    await channel.workers()[0].run(burst=True)  # the outbox is printed before the draft is seen
    printing = asyncio.create_task(channel.stream())
    for _ in range(5):  # let it take the waiting change (no time passes)
        await asyncio.sleep(0)
    printing.cancel()
    assert screen.getvalue() == "vaultbot> Hello there.\n"


async def test_without_a_subscriber_a_run_gets_no_listener(make_app: Callable[..., Awaitable[App]]) -> None:
    app = await make_app(ScriptedModel())
    assert app.progress.open(key="m1", channel=CHANNEL, conversation="c", recipient="ann") is None


async def test_text_written_after_send_message_is_never_printed(make_app: Callable[..., Awaitable[App]]) -> None:
    # A run that called send_message has answered: its final text is not sent, so the terminal must not
    # show it as it is written either (it would read as a reply the user never gets again).
    model = ScriptedModel()
    model.enqueue(call(("send_message", {"text": "On it."})), say("I have sent it to you."))
    screen = await talk(make_app, model, tty=True)
    assert "On it." in screen.getvalue()
    assert "sent it to you" not in "".join(screen.writes)
