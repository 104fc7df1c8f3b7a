"""How an inbound message reads to its run: the tool context it runs in, whether it is a command, the
text the model reads, and the parts of its album taken with it."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from datetime import tzinfo

from bot.bus import INBOUND, Bus, Delivery, InboundMessage, UntrustedPart
from bot.clock import stamped
from bot.consent import note_source
from bot.runner.commands import Command, parse_command
from bot.tools import ToolContext
from bot.undo import brought

log = logging.getLogger(__name__)


def context_for(
    message: InboundMessage, *, run_id: str, fence: Callable[[], Awaitable[None]] | None = None
) -> ToolContext:
    """The tool context of a run on ``message``, holding the files it brought from the start."""
    # The recipient comes from the message as the channel received it, never from the model.
    return ToolContext(
        conversation=message.conversation,
        channel=message.channel,
        recipient=message.recipient,
        run_id=run_id,
        inbound_id=message.id,
        person=message.sender.id,
        changes=brought(message),
        fence=fence,
    )


def command_of(message: InboundMessage) -> Command | None:
    """The slash command the person sent, if any: a scheduled task's text is never one (a scheduled
    ``/undo`` or ``/new`` would act with no one there to ask it)."""
    return None if message.reminder is not None else parse_command(message.text)


def as_task(message: InboundMessage) -> InboundMessage:
    """A scheduled task made by a run that held someone else's words, with its text as their words: it
    is as tainted when it runs as the run that scheduled it (``bot.reminders``)."""
    if message.reminder is None or not message.reminder.sources or not message.text:
        return message
    part = UntrustedPart(source=note_source(message.reminder.sources, "scheduled task"), text=message.text)
    return message.model_copy(update={"text": "", "untrusted": [part, *message.untrusted]})


def as_read(message: InboundMessage, text: str, tz: tzinfo, *, retried: bool = False) -> str:
    """``text`` (the message's, with any transcript) as the model reads it and history keeps it:
    stamped with the local time the message was received, which a re-run after a crash or a retry
    keeps (it travels with the message). With ``retried``, a message sent again by ``vaultbot retry``
    says when it was first sent and where it was filed then, so the model does not file it twice."""
    if retried and message.retry is not None:
        first = message.retry.first_received_at.astimezone(tz)
        where = (
            f" It was filed in the vault then, as {message.retry.filed}: update that note if needed "
            "rather than filing the message again."
            if message.retry.filed
            else ""
        )
        sent = f"first sent at {first:%Y-%m-%d %H:%M}, when it could not be answered"
        text += f"\n\n[vaultbot: this message was {sent}.{where}]"
    return stamped(text, message.received_at, tz)


async def with_album(bus: Bus, delivery: Delivery, message: InboundMessage) -> tuple[InboundMessage, list[int]]:
    """``message`` with the other parts of its album that are waiting behind it (their text, images and
    files after its own), and their bus ids; a message of no album as it is."""
    if message.group is None:
        return message, []
    parts = [p for p in await bus.group(INBOUND, delivery.conversation, message.group) if p.id != delivery.id]
    if not parts:
        return message, []
    others = [part.parse(InboundMessage) for part in parts]
    texts = [m.text for m in (message, *others) if m.text]
    images = [path for m in (message, *others) for path in m.images]
    attachments = [attachment for m in (message, *others) for attachment in m.attachments]
    log.info("album %s: %d parts in one turn", message.group, len(parts) + 1)
    merged = {"text": "\n".join(texts), "images": images, "attachments": attachments}
    return message.model_copy(update=merged), [p.id for p in parts]
