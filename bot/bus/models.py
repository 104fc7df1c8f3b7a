"""The typed messages that cross the bus, serialised to JSON, and the topics they travel on."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

__all__ = [
    "CONSENT",
    "EVENTS",
    "Answer",
    "Attachment",
    "Audio",
    "Button",
    "Decision",
    "Document",
    "INBOUND",
    "OUTBOUND",
    "Event",
    "InboundMessage",
    "OutboundMessage",
    "Retried",
    "Scheduled",
    "Sender",
    "UntrustedPart",
    "events_topic",
    "outbound_topic",
]

INBOUND = "inbound"
OUTBOUND = "outbound"
EVENTS = "events"
# The timeouts of questions for consent (``bot.consent``): messages due when a question expires, on a
# topic of their own so that waiting for one never holds up, or keeps a burst of, the inbound topic.
CONSENT = "consent"


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


class UntrustedPart(BaseModel):
    """Words that came with a message but that the person did not write (a forwarded message, someone
    else's message they reply to): kept apart from ``text`` so the runner shows them to the model as
    someone else's (``bot.consent``). ``source`` is a few words of the channel's ("forwarded message"),
    ``origin`` who wrote them as the channel knows it (a name, which is theirs too, so never trusted)."""

    source: str
    text: str
    origin: str | None = None


class Answer(BaseModel):
    """The person's answer to a question for consent (``question``: its id), or its timeout (``expire``)."""

    question: str
    choice: Literal["allow", "deny", "expire"]


class Attachment(BaseModel):
    """A file that came with a message, already kept in the vault at ``path`` (vault-relative) before its
    run began: undoing the run takes it back with the notes that link it (``bot.undo``)."""

    path: str
    kind: Literal["image", "document", "audio", "voice", "video", "video_note", "file"]


class Scheduled(BaseModel):
    """The scheduled task a message starts (``bot.reminders``): the reminder's ``id``, and the ``sources``
    of someone else's words the run that scheduled it held, which make the task as tainted when it runs."""

    id: str
    sources: list[str] = Field(default_factory=list)


# The keys of ``meta`` that were fields' data before they became fields: read from a message stored on
# the bus by an older version (a durable bus outlives an upgrade).
_OLD_META = ("reply_to", "tap", "reminder", "sources", "attachment", "attachments")


class InboundMessage(BaseModel):
    """A message from a person, as a channel received it. ``id`` is stable across redeliveries."""

    id: str = Field(default_factory=lambda: uuid.uuid4().hex)
    channel: str
    conversation: str
    sender: Sender
    text: str
    received_at: datetime = Field(default_factory=_utcnow)
    # The one place for channel-specific data (a Telegram chat id, message id, file ids): only the channel
    # that wrote it reads it.
    meta: dict[str, Any] = Field(default_factory=dict)
    # Where replies go when not to the sender (a group chat's id): see ``recipient``.
    reply_to: str | None = None
    # Every file the channel kept in the vault for the message, whatever else reads it (``audio``,
    # ``document``, ``images``).
    attachments: list[Attachment] = Field(default_factory=list)
    audio: Audio | None = None
    document: Document | None = None
    # Images that came with the message (a photo, an image file), vault-relative: the runner shows them
    # to the model.
    images: list[str] = Field(default_factory=list)
    # Messages of one conversation with the same group (a Telegram album) reach the model as one.
    group: str | None = None
    retry: Retried | None = None
    untrusted: list[UntrustedPart] = Field(default_factory=list)
    # Set on an answer to a question for consent instead of words to answer (``text`` is then empty).
    answer: Answer | None = None
    # The channel's id of the tap that gave ``answer`` (a Telegram callback query), which the decision answers.
    tap: str | None = None
    # Set on a scheduled task's message: it is no command, and declines no question the person has open.
    reminder: Scheduled | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_old_meta(cls, data: Any) -> Any:
        """A message stored by a version that kept where replies go, the tap, the reminder and the
        attachments in ``meta``, with them moved to their fields."""
        if not isinstance(data, dict) or not isinstance(data.get("meta"), dict):
            return data
        meta = dict(data["meta"])
        if not any(key in meta for key in _OLD_META):
            return data
        old = {key: meta.pop(key, None) for key in _OLD_META}
        data = {**data, "meta": meta}
        if old["reply_to"] is not None:
            data.setdefault("reply_to", str(old["reply_to"]))
        if old["tap"] is not None:
            data.setdefault("tap", str(old["tap"]))
        if old["reminder"] is not None:
            data.setdefault("reminder", {"id": str(old["reminder"]), "sources": old["sources"] or []})
        paths = [old["attachment"], *(old["attachments"] or [])]
        if any(isinstance(path, str) for path in paths):
            data.setdefault("attachments", [_old_attachment(path, data) for path in paths if isinstance(path, str)])
        return data

    @property
    def recipient(self) -> str:
        """Where replies go: ``reply_to`` when the channel set it (a group chat), else the sender."""
        return self.reply_to or self.sender.id


def _old_attachment(path: str, data: dict[str, Any]) -> dict[str, str]:
    """An attachment an older version listed by path alone, its kind read from the fields that hold it."""
    audio, document = data.get("audio"), data.get("document")
    if path in (data.get("images") or []):
        return {"path": path, "kind": "image"}
    if audio is not None and _path_of(audio) == path:
        return {"path": path, "kind": audio["kind"] if isinstance(audio, dict) else audio.kind}
    if document is not None and _path_of(document) == path:
        return {"path": path, "kind": "document"}
    return {"path": path, "kind": "file"}


def _path_of(part: Any) -> Any:
    return part.get("path") if isinstance(part, dict) else getattr(part, "path", None)


class Button(BaseModel):
    """A button under a message that opens a web page: in Telegram inside the chat, as a Mini App
    (which Telegram signs in); a channel without buttons shows its address."""

    text: str
    url: str


class Decision(BaseModel):
    """What became of a question for consent: the channel shows ``text`` where the question's buttons
    were (in Telegram, the buttons are edited) and answers the ``tap`` that decided it, if one did."""

    question: str
    text: str
    tap: str | None = None


class OutboundMessage(BaseModel):
    """A message to a person; keyed on the bus by (``in_reply_to``, ``sequence``).

    ``question`` (a question for consent's id) asks the person to Allow or Deny; ``decision`` tells
    what became of one. ``preview`` is the one address whose link preview may be shown, an address the
    person sent themself; without it no preview is shown, so no address the model wrote is fetched."""

    channel: str
    conversation: str
    recipient: str
    text: str
    in_reply_to: str | None = None
    sequence: int = 0
    kind: Literal["reply", "notice", "error"] = "reply"
    button: Button | None = None
    question: str | None = None
    decision: Decision | None = None
    preview: str | None = None


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
