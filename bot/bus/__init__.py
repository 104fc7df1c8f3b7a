"""The durable message bus: typed messages on SQLite topics, the worker loop that consumes them, and
the ephemeral progress of replies being written (``progress``)."""

from bot.bus.bus import Bus, Delivery, Publication, Published
from bot.bus.models import (
    EVENTS,
    INBOUND,
    OUTBOUND,
    Audio,
    Document,
    Event,
    InboundMessage,
    OutboundMessage,
    Retried,
    Sender,
    events_topic,
    outbound_topic,
)
from bot.bus.progress import Draft, DraftWriter, Progress, Subscription
from bot.bus.worker import ACKED, Fatal, Handler, OnDead, Retry, Worker

__all__ = [
    "ACKED",
    "EVENTS",
    "INBOUND",
    "OUTBOUND",
    "Audio",
    "Bus",
    "Delivery",
    "Document",
    "Draft",
    "DraftWriter",
    "Event",
    "Fatal",
    "Handler",
    "InboundMessage",
    "Retried",
    "OnDead",
    "OutboundMessage",
    "Progress",
    "Publication",
    "Published",
    "Retry",
    "Sender",
    "Subscription",
    "Worker",
    "events_topic",
    "outbound_topic",
]
