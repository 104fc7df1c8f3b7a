"""The typed messages that cross the bus, serialised to JSON, and the topics they travel on."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "EVENTS",
    "Audio",
    "Button",
    "Document",
    "INBOUND",
    "OUTBOUND",
    "Event",
    "InboundMessage",
    "OutboundMessage",
    "Retried",
    "Sender",
    "events_topic",
    "outbound_topic",
]

INBOUND = "inbound"
OUTBOUND = "outbound"
EVENTS = "events"


def events_topic(channel: str) -> str:
    """The events of runs on one channel, so that channel can tell its user."""
    return f"{EVENTS}:{channel}"


def outbound_topic(channel: str) -> str:
    """The outbox of one channel, so each channel's sender claims only its own replies."""
    return f"{OUTBOUND}:{channel}"


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Sender(BaseModel):
    """Who sent an inbound message, as the channel knows them."""

    id: str
    name: str | None = None


class Audio(BaseModel):
    """A recording that came with a message (a voice note, an audio file, a video note), already kept
    in the vault at ``path`` (vault-relative); the runner transcribes it."""

    path: str
    kind: Literal["voice", "audio", "video_note"]
    duration: float | None = None  # seconds, as the channel reported it

    @property
    def noun(self) -> str:
        """What a person calls it: "voice note", "audio file", "video note"."""
        return {"voice": "voice note", "audio": "audio file", "video_note": "video note"}[self.kind]


class Document(BaseModel):
    """A document that came with a message (a PDF, a text, CSV, JSON or Markdown file), already kept in
    the vault at ``path`` (vault-relative); the runner gives the model its text."""

    path: str


class Retried(BaseModel):
    """A dead-lettered message sent again (``vaultbot retry``): when it first arrived, and where in the
    vault it was filed when it was dead-lettered (None if that failed)."""

    first_received_at: datetime
    filed: str | None = None


class InboundMessage(BaseModel):
    """A message from a person, as a channel received it. ``id`` is stable across redeliveries."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    channel: str
    conversation: str
    sender: Sender
    text: str
    received_at: datetime = Field(default_factory=_utcnow)
    # The one place for channel-specific data (a Telegram chat id, message id, file ids).
    meta: dict[str, Any] = Field(default_factory=dict)
    audio: Audio | None = None
    document: Document | None = None
    # Images that came with the message (a photo, an image file), vault-relative: the runner shows them
    # to the model.
    images: list[str] = Field(default_factory=list)
    # Messages of one conversation with the same group (a Telegram album) reach the model as one.
    group: str | None = None
    retry: Retried | None = None

    @property
    def reply_to(self) -> str:
        """Where replies go: ``meta["reply_to"]`` when the channel set it (a group chat), else the sender."""
        return str(self.meta.get("reply_to", self.sender.id))


class Button(BaseModel):
    """A button under a message that opens a web page: in Telegram inside the chat, as a Mini App
    (which Telegram signs in); a channel without buttons shows its address."""

    text: str
    url: str


class OutboundMessage(BaseModel):
    """A message to a person; keyed on the bus by (``in_reply_to``, ``sequence``)."""

    channel: str
    conversation: str
    recipient: str
    text: str
    in_reply_to: str | None = None
    sequence: int = 0
    kind: Literal["reply", "notice", "error"] = "reply"
    button: Button | None = None


class Event(BaseModel):
    """Something that happened during a run (``failure.detected``, ``run.escalated``, ``run.retrying``).

    ``notice`` is the one short line the channel shows ``recipient``, when the user should know.
    """

    type: str
    conversation: str
    recipient: str
    run_id: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    notice: str | None = None
    at: datetime = Field(default_factory=_utcnow)
