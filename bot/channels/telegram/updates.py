"""What a Telegram update says, as plain data: who, where, what kind, which text and file.

Pure functions over python-telegram-bot's ``Update``, so every message kind is testable
without a network, and the channel never touches ptb's objects beyond this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from telegram import (
    Audio,
    Message,
    MessageOrigin,
    MessageOriginChannel,
    MessageOriginChat,
    MessageOriginHiddenUser,
    MessageOriginUser,
    Update,
    VideoNote,
    Voice,
)

# Telegram's Bot API will not hand a bot a file larger than this.
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024
# Files the model is shown as images (the Messages API's four formats), by type or by name.
IMAGE_TYPES = {"image/jpeg", "image/png", "image/webp", "image/gif"}
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif")


@dataclass(frozen=True)
class Attachment:
    """A file to fetch into the vault."""

    kind: str  # photo, document, voice, audio, video, video_note
    file_id: str
    file_size: int | None
    name: str
    duration: int | None = None  # seconds, for recordings
    mime_type: str | None = None  # for documents, as the sender's app gave it

    @property
    def is_image(self) -> bool:
        """A photo, or a file the model can be shown as an image (JPEG, PNG, WebP, GIF)."""
        if self.kind == "photo":
            return True
        return self.kind == "document" and (self.mime_type in IMAGE_TYPES or self.name.lower().endswith(IMAGE_SUFFIXES))


@dataclass(frozen=True)
class Incoming:
    """One message from Telegram, reduced to what vaultbot uses."""

    update_id: int
    chat_id: int
    chat_type: str
    user_id: int | None
    user_name: str | None
    message_id: int
    text: str
    kind: str  # text, photo, document, voice, audio, video, video_note, location, or an unsupported kind's name
    attachment: Attachment | None = None
    edited: bool = False
    forwarded_from: str | None = None
    quoted: str | None = None
    # Who wrote the quoted words, unless the person typed them (the bot's own messages included): a name.
    quoted_from: str | None = None
    addressed_to_bot: bool = False
    media_group_id: str | None = None  # the album the message is part of

    @property
    def supported(self) -> bool:
        """Whether vaultbot can do something useful with this kind of message."""
        return self.kind in SUPPORTED


SUPPORTED = {"text", "photo", "document", "voice", "audio", "video", "video_note", "location"}


# The callback data of a question's buttons: "consent:<question id>:<allow|deny|shown>" (at most 64 bytes).
CONSENT_DATA = re.compile(r"consent:([0-9a-f]{16}):(allow|deny|shown)")


def consent_data(question: str, choice: str) -> str:
    """The callback data of a question's button (``choice``: allow, deny, or shown once decided)."""
    return f"consent:{question}:{choice}"


@dataclass(frozen=True)
class Tap:
    """A tap on a question's button: who, where, which question, and the choice."""

    update_id: int
    query_id: str
    chat_id: int
    user_id: int
    user_name: str | None
    question: str
    choice: Literal["allow", "deny", "expire"]


def read_tap(update: Update) -> Tap | None:
    """The tap on a question's button in ``update``, or None (another update, or other data). A tap on
    the button that shows a decision reads as an answer too: the runner says it was decided."""
    query = update.callback_query
    if query is None or query.message is None or query.data is None:
        return None
    found = CONSENT_DATA.fullmatch(query.data)
    if found is None:
        return None
    question, choice = found.groups()
    user = query.from_user
    return Tap(
        update_id=update.update_id,
        query_id=query.id,
        chat_id=query.message.chat.id,
        user_id=user.id,
        user_name=user.username or user.first_name,
        question=question,
        choice="deny" if choice == "shown" else choice,  # type: ignore[arg-type]
    )


def read_update(update: Update, *, bot_username: str, bot_id: int) -> Incoming | None:
    """The message in ``update``, or None for updates that carry none (they are skipped)."""
    message = update.message or update.edited_message
    if message is None or message.chat is None:
        return None
    user = message.from_user
    text = message.text or message.caption or ""
    if message.location is not None:
        text = location_text(message.location.latitude, message.location.longitude)
    return Incoming(
        update_id=update.update_id,
        chat_id=message.chat.id,
        chat_type=message.chat.type,
        user_id=user.id if user else None,
        user_name=(user.username or user.first_name) if user else None,
        message_id=message.message_id,
        text=text,
        kind=_kind(message),
        attachment=_attachment(message),
        edited=update.edited_message is not None,
        forwarded_from=_origin(message),
        quoted=_quoted(message),
        quoted_from=_quoted_from(message, bot_id),
        addressed_to_bot=f"@{bot_username}".lower() in text.lower() or _replies_to(message, bot_id),
        media_group_id=message.media_group_id,
    )


def _replies_to(message: Message, bot_id: int) -> bool:
    replied = message.reply_to_message
    return replied is not None and replied.from_user is not None and replied.from_user.id == bot_id


def _kind(message: Message) -> str:
    if message.text is not None:
        return "text"
    if message.location is not None:
        return "location"
    for kind in ("photo", "document", "voice", "audio", "video", "video_note"):
        if getattr(message, kind):
            return kind
    for kind in ("sticker", "animation", "contact", "poll", "dice", "game", "venue"):
        if getattr(message, kind, None):
            return kind
    return "unknown"


def _attachment(message: Message) -> Attachment | None:
    if message.photo:
        biggest = max(message.photo, key=lambda p: (p.width * p.height, p.file_size or 0))
        return Attachment("photo", biggest.file_id, biggest.file_size, f"photo {message.message_id}.jpg")
    if message.document:
        doc = message.document
        name = doc.file_name or f"document {message.message_id}"
        return Attachment("document", doc.file_id, doc.file_size, name, mime_type=doc.mime_type)
    if message.voice:
        voice = message.voice
        return Attachment("voice", voice.file_id, voice.file_size, f"voice {message.message_id}.ogg", _seconds(voice))
    if message.audio:
        audio = message.audio
        name = audio.file_name or f"audio {message.message_id}.mp3"
        return Attachment("audio", audio.file_id, audio.file_size, name, _seconds(audio))
    if message.video_note:
        note = message.video_note
        name = f"video note {message.message_id}.mp4"
        return Attachment("video_note", note.file_id, note.file_size, name, _seconds(note))
    if message.video:
        video = message.video
        return Attachment("video", video.file_id, video.file_size, video.file_name or f"video {message.message_id}.mp4")
    return None


def _seconds(recording: Voice | Audio | VideoNote) -> int | None:
    # The attribute is an int or a timedelta depending on ptb's version (and warns in between);
    # the update's own field is always whole seconds.
    duration = recording.to_dict().get("duration")
    return int(duration) if isinstance(duration, int | float) else None


def _origin(message: Message) -> str | None:
    origin = message.forward_origin
    return None if origin is None else _origin_name(origin)


def _origin_name(origin: MessageOrigin) -> str:
    """Who wrote a forwarded or quoted message, as its origin names them."""
    if isinstance(origin, MessageOriginUser):
        return origin.sender_user.full_name
    if isinstance(origin, MessageOriginHiddenUser):
        return origin.sender_user_name
    if isinstance(origin, MessageOriginChat):
        return origin.sender_chat.title or "a chat"
    if isinstance(origin, MessageOriginChannel):
        return origin.chat.title or "a channel"
    return "someone"


def _quoted(message: Message) -> str | None:
    if message.quote is not None and message.quote.text:
        return message.quote.text
    replied = message.reply_to_message
    if replied is None:
        return None
    return replied.text or replied.caption or None


def _quoted_from(message: Message, bot_id: int) -> str | None:
    """Who wrote the words the message quotes or replies to, unless the sender typed them: a name.
    Only the sender's own message is theirs; a forward they sent, a message of another chat ("reply in
    another chat"), one sent through an inline bot and the bot's own messages (which may repeat anyone's
    words) are not."""
    if message.external_reply is not None:
        return _origin_name(message.external_reply.origin)
    replied = message.reply_to_message
    if replied is None:
        return None
    if replied.forward_origin is not None:
        return _origin_name(replied.forward_origin)
    if replied.via_bot is not None:
        return replied.via_bot.full_name or "a bot"
    author = replied.from_user
    if author is not None and author.id == bot_id:
        return "this assistant, an earlier message of its own"
    if author is not None and message.from_user is not None and author.id == message.from_user.id:
        return None
    if author is not None:
        return author.full_name or author.username or "someone"
    if replied.sender_chat is not None:
        return replied.sender_chat.title or "a chat"
    return "someone"


def location_text(lat: float, lon: float) -> str:
    """A location as text a person and a note can use."""
    return f"📍 Location: {lat:.5f}, {lon:.5f} (https://www.openstreetmap.org/?mlat={lat:.5f}&mlon={lon:.5f})"
