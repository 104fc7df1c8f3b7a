"""``send_message`` and ``log_interaction``: the tools that speak to the user and to the log."""

from __future__ import annotations

from typing import Any

from bot.bus import Bus, Button, OutboundMessage, Publication, outbound_topic
from bot.clock import unstamp
from bot.consent import sent_link
from bot.store import Store
from bot.tools.context import ToolContext
from bot.tools.schemas import LogInteractionInput, SendMessageInput


async def queue_reply(bus: Bus, context: ToolContext, text: str) -> bool:
    """Put a reply in the durable outbox, keyed by (inbound message, sequence).

    A re-run of the same inbound message numbers its replies the same way, so a reply that was
    already queued before a crash is not queued again. Returns False for such a duplicate.
    """
    return await _queue(bus, reply(context, text))


async def queue_notice(bus: Bus, context: ToolContext, text: str, *, key: str, once_per: str | None = None) -> bool:
    """Tell the user something once per inbound message and ``key`` (e.g. "model-unreachable");
    with ``once_per`` (e.g. a date), once per conversation, ``once_per`` and ``key`` instead."""
    return await _queue(bus, notice(context, text, key=key, once_per=once_per))


def reply(context: ToolContext, text: str, *, button: Button | None = None) -> Publication:
    """The publication :func:`queue_reply` makes, for a caller that publishes it with other writes;
    ``button`` goes under it."""
    sequence = context.next_sequence()
    # A model may imitate the time stamps on the user's messages; the user never sees them.
    text = unstamp(text)
    preview = sent_link(text, context.addresses)
    return _publication(
        context, text, kind="reply", sequence=sequence, key=str(sequence), button=button, preview=preview
    )


def notice(context: ToolContext, text: str, *, key: str, once_per: str | None = None) -> Publication:
    """The publication :func:`queue_notice` makes, for a caller that publishes it with other writes."""
    scope = context.inbound_id if once_per is None else f"{context.conversation}:{once_per}"
    return _publication(context, text, kind="notice", sequence=0, key=key, scope=scope)


async def _queue(bus: Bus, publication: Publication) -> bool:
    published = await bus.publish(
        publication.topic,
        publication.message,
        conversation=publication.conversation,
        dedupe_key=publication.dedupe_key,
    )
    return not published.duplicate


def _publication(
    context: ToolContext,
    text: str,
    *,
    kind: str,
    sequence: int,
    key: str,
    scope: str | None = None,
    button: Button | None = None,
    preview: str | None = None,
) -> Publication:
    message = OutboundMessage(
        channel=context.channel,
        conversation=context.conversation,
        recipient=context.recipient,
        text=text,
        in_reply_to=context.inbound_id,
        sequence=sequence,
        kind=kind,  # type: ignore[arg-type]
        button=button,
        preview=preview,
    )
    return Publication(
        outbound_topic(context.channel),
        message,
        context.conversation,
        dedupe_key=f"{scope or context.inbound_id}:{key}",
    )


class SendMessage:
    """Send the user a message; the recipient comes from the run, never from the model."""

    name = "send_message"
    description = (
        "Send the user a message (Markdown) while you keep working; the recipient is always the person "
        "you are talking to. To reply when you are done, end your turn with the reply as your final "
        "text instead: it is sent for you, and after send_message it is not sent again."
    )
    input_model = SendMessageInput

    def __init__(self, bus: Bus) -> None:
        self._bus = bus

    async def run(self, input: SendMessageInput, context: ToolContext) -> dict[str, Any]:
        """Queue the message durably."""
        await queue_reply(self._bus, context, input.text)
        return {"success": True}


class LogInteraction:
    """Record the interaction in the log the user reviews with ``vaultbot log``."""

    name = "log_interaction"
    description = (
        "Record a one- or two-sentence summary of what you did for the user in their interaction log, "
        "with a category such as note, task, question or link. Call it once per message you handle, "
        "in the same response as the other tools that do the work."
    )
    input_model = LogInteractionInput

    def __init__(self, store: Store) -> None:
        self._store = store

    async def run(self, input: LogInteractionInput, context: ToolContext) -> dict[str, Any]:
        """Store the entry and return its id."""
        entry_id = await self._store.add_interaction(
            conversation=context.conversation,
            category=input.category,
            summary=input.summary,
            run_id=context.run_id,
        )
        return {"success": True, "id": entry_id}


# The tools that tell someone (the user, the log) what a response's other calls did. Asked for in the
# same response as those calls, they are written before the model has read whether the calls worked.
TELLING = frozenset({SendMessage.name, LogInteraction.name})
