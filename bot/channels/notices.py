"""What a channel says itself, through its outbox: a notice to a sender whose message goes no further (a
file too big, a kind it cannot take, a refusal), and the one-line notices of run events."""

from __future__ import annotations

from dataclasses import dataclass

from bot.bus import Bus, Delivery, Event, OutboundMessage, outbound_topic

__all__ = ["Notice", "event_notice", "tell"]


@dataclass(frozen=True)
class Notice:
    """The one-line notice of a run's event, for ``recipient`` in ``conversation``."""

    text: str
    recipient: str
    conversation: str
    run_id: str | None


async def tell(
    bus: Bus,
    *,
    channel: str,
    conversation: str,
    recipient: str,
    text: str,
    dedupe_key: str,
    in_reply_to: str | None = None,
) -> None:
    """Queue ``text`` for ``recipient`` as a notice, once per ``dedupe_key`` (a redelivered message is
    told once); ``in_reply_to``, the inbound message it answers, threads it where the channel can."""
    notice = OutboundMessage(
        channel=channel,
        conversation=conversation,
        recipient=recipient,
        text=text,
        in_reply_to=in_reply_to,
        kind="notice",
    )
    await bus.publish(outbound_topic(channel), notice, conversation=conversation, dedupe_key=dedupe_key)


def event_notice(delivery: Delivery) -> Notice | None:
    """The notice of the run event ``delivery`` carries, if it has one to pass on (most events have none)."""
    event = delivery.parse(Event)
    if not event.notice:
        return None
    return Notice(event.notice, event.recipient, event.conversation, event.run_id)
