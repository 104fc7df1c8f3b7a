"""The durable message bus: typed messages on SQLite topics, and the worker loop that consumes them."""

from bot.bus.bus import Bus, Delivery, Publication, Published
from bot.bus.models import (
    EVENTS,
    INBOUND,
    OUTBOUND,
    Audio,
    Button,
    Document,
    Event,
    InboundMessage,
    OutboundMessage,
    Retried,
    Sender,
    events_topic,
    outbound_topic,
)
from bot.bus.worker import ACKED, Fatal, Handler, OnDead, Retry, Worker

__all__ = [
    "ACKED",
    "EVENTS",
    "INBOUND",
    "OUTBOUND",
    "Audio",
    "Bus",
    "Button",
    "Delivery",
    "Document",
    "Event",
    "Fatal",
    "Handler",
    "InboundMessage",
    "Retried",
    "OnDead",
    "OutboundMessage",
    "Publication",
    "Published",
    "Retry",
    "Sender",
    "Worker",
    "events_topic",
    "outbound_topic",
]
