"""A phone channel's two senders off the bus, its replies and its events (typing, drafts, buttons), and
the truth told about a reply it could not send."""

from __future__ import annotations

from typing import Protocol

from bot.bus import Bus, Delivery, OutboundMessage, Worker, events_topic, outbound_topic
from bot.store import Store


class Sends(Protocol):
    """What a channel's sender does with what the bus hands it."""

    async def deliver(self, delivery: Delivery) -> None:
        """Send one reply."""

    async def undeliverable(self, delivery: Delivery, error: BaseException) -> None:
        """Tell the truth about a reply that could not be sent."""

    async def tell(self, delivery: Delivery) -> None:
        """Pass on one event."""


def outbox_workers(bus: Bus, channel: str, sender: Sends, *, lease: float, max_attempts: int) -> tuple[Worker, Worker]:
    """The workers of ``channel``'s replies (eight at once; a reply given up on goes to
    ``undeliverable``) and of its events (four at once)."""
    replies = Worker(
        bus,
        outbound_topic(channel),
        sender.deliver,
        concurrency=8,
        lease=lease,
        max_attempts=max_attempts,
        on_dead=sender.undeliverable,
        name=channel,
    )
    events = Worker(
        bus,
        events_topic(channel),
        sender.tell,
        concurrency=4,
        lease=lease,
        max_attempts=max_attempts,
        name=f"{channel}-events",
    )
    return replies, events


async def log_undeliverable(store: Store, delivery: Delivery, error: BaseException, *, how: str) -> None:
    """A reply the service would not take, after every attempt: never hidden, it goes in the log as
    "A reply could not be ``how`` RECIPIENT: error" (``how``: "mailed to", "delivered to Telegram chat")."""
    message = delivery.parse(OutboundMessage)
    await store.add_interaction(
        conversation=message.conversation,
        category="error",
        summary=f"A reply could not be {how} {message.recipient}: {error}",
        run_id=None,
    )
