"""Receiving: one Telegram update → access check → (attachment saved) → a durable inbound message.

The photos of an album arrive as separate updates, each stored on its own as it comes (so a crash
between two parts loses neither); each part holds the album's earlier parts back on the bus until no
part has come for ``album_wait`` seconds, and the runner then handles them as one message.

It never calls the model. What it cannot pass on (a stranger, an unsupported kind, a file too big)
it answers through the outbox, keyed by the update, so a redelivered update is answered once; a
stranger at most once an hour, however many messages they send (:class:`bot.store.Strangers`).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from telegram import Bot, Update
from telegram.error import BadRequest, TelegramError

from bot.bus import (
    INBOUND,
    Answer,
    Attachment,
    Audio,
    Bus,
    Document,
    InboundMessage,
    Sender,
    UntrustedPart,
)
from bot.channels.attachments import readable_document, save_attachment, saved_line
from bot.channels.conversations import conversation_id
from bot.channels.corrections import CORRECTION
from bot.channels.notices import tell
from bot.channels.telegram.access import REFUSAL, Access
from bot.channels.telegram.indicator import Typing
from bot.channels.telegram.updates import MAX_DOWNLOAD_BYTES, Incoming, Tap, read_tap, read_update
from bot.store import Store, Strangers
from vault import Vault

log = logging.getLogger(__name__)

CHANNEL = "telegram"
UNSUPPORTED = (
    "Sorry, I can't handle this kind of message ({kind}) yet. "
    "Text, photos, files, voice notes, video notes and locations work."
)
# Recordings the runner transcribes (the channel only stores them).
RECORDINGS = {"voice", "audio", "video_note"}


class TelegramReceiver:
    """Turns updates into inbound messages on the bus."""

    def __init__(
        self,
        bot: Bot,
        *,
        access: Access,
        bus: Bus,
        store: Store,
        notes: Vault,
        typing: Typing,
        album_wait: float = 1.0,
    ) -> None:
        self._bot = bot
        self._strangers = Strangers(store)
        self._album_wait = album_wait
        self._access = access
        self._bus = bus
        self._notes = notes
        self._typing = typing

    async def receive_raw(self, data: dict[str, Any]) -> None:
        """Handle one update as Telegram sent it; a malformed one is logged and skipped."""
        try:
            update = Update.de_json(data, self._bot)
            incoming = read_update(update, bot_username=self._bot.username, bot_id=self._bot.id)
            tap = read_tap(update)
        except Exception:  # a malformed update must not stop the channel
            log.exception("telegram: skipping malformed update %s", data.get("update_id"))
            return
        if incoming is not None:
            await self.receive(incoming)
        elif tap is not None:
            await self.receive_tap(tap)

    async def receive_tap(self, tap: Tap) -> None:
        """Put an answer to a question for consent on the bus; the runner decides what it does and
        answers the tap. A stranger's tap is refused here."""
        if tap.user_id not in self._access.allowed_users:
            log.warning("telegram: refused a tap by user %s in chat %s", tap.user_id, tap.chat_id)
            with contextlib.suppress(TelegramError):
                await self._bot.answer_callback_query(tap.query_id, REFUSAL)
            return
        conversation = conversation_id(CHANNEL, tap.chat_id)
        message = InboundMessage(
            channel=CHANNEL,
            conversation=conversation,
            sender=Sender(id=str(tap.user_id), name=tap.user_name),
            text="",
            answer=Answer(question=tap.question, choice=tap.choice),
            meta={"chat_id": tap.chat_id, "update_id": tap.update_id},
            reply_to=str(tap.chat_id),
            tap=tap.query_id,
        )
        await self._bus.publish(INBOUND, message, conversation=conversation, dedupe_key=f"tg:{tap.update_id}")

    async def receive(self, incoming: Incoming) -> None:
        """Put one message on the bus (or answer it here when it can go no further)."""
        decision = self._access.decide(incoming)
        if decision == "ignore":
            return
        if decision == "refuse":
            await self._refuse(incoming)
            return
        if not incoming.supported:
            await self._tell(incoming, UNSUPPORTED.format(kind=incoming.kind), "unsupported")
            return
        self._typing.start(incoming.chat_id, conversation_of(incoming))
        attachment_path = None
        if incoming.attachment is not None:
            attachment_path = await self._download(incoming)
            if attachment_path is None:
                return
        message = InboundMessage(
            channel=CHANNEL,
            conversation=conversation_of(incoming),
            sender=Sender(id=str(incoming.user_id), name=incoming.user_name),
            text=compose_text(incoming, attachment_path),
            reply_to=str(incoming.chat_id),
            meta={
                "chat_id": incoming.chat_id,
                "message_id": incoming.message_id,
                "update_id": incoming.update_id,
                "kind": incoming.kind,
                "edited": incoming.edited,
                "forwarded_from": incoming.forwarded_from,
            },
            attachments=attachments_of(incoming, attachment_path),
            untrusted=others_of(incoming),
            audio=recording_of(incoming, attachment_path),
            document=document_of(incoming, attachment_path),
            images=images_of(incoming, attachment_path),
            group=f"tg:{incoming.media_group_id}" if incoming.media_group_id else None,
        )
        delay = 0.0
        if message.group is not None:
            # Before this part is stored: should it not be, Telegram sends it again and it holds them then.
            await self._bus.hold_group(INBOUND, message.conversation, message.group, self._album_wait)
            delay = self._album_wait
        await self._bus.publish(
            INBOUND, message, conversation=message.conversation, dedupe_key=f"tg:{incoming.update_id}", delay=delay
        )

    async def _refuse(self, incoming: Incoming) -> None:
        refusal = await self._strangers.refuse(
            channel=CHANNEL,
            sender=str(incoming.user_id),
            who=f"Telegram user {incoming.user_id} ({incoming.user_name or 'unknown'})",
            conversation=conversation_of(incoming),
        )
        if not refusal.first:  # counted in the window's entry; answered and logged once already
            return
        log.warning("telegram: refused user %s (%s) in chat %s", incoming.user_id, incoming.user_name, incoming.chat_id)
        if incoming.chat_type == "private":
            await self._tell(incoming, REFUSAL, "refused")

    async def _download(self, incoming: Incoming) -> str | None:
        attachment = incoming.attachment
        assert attachment is not None
        too_big = (
            f"That {attachment.kind} is too big for me: Telegram lets bots download files up to "
            f"{MAX_DOWNLOAD_BYTES // (1024 * 1024)} MB."
        )
        if attachment.file_size is not None and attachment.file_size > MAX_DOWNLOAD_BYTES:
            await self._tell(incoming, too_big, "too-big")
            return None
        try:
            file = await self._bot.get_file(attachment.file_id)
            # The update may not say how big the file is; getFile does, before anything is downloaded.
            if file.file_size is not None and file.file_size > MAX_DOWNLOAD_BYTES:
                await self._tell(incoming, too_big, "too-big")
                return None
            data = bytes(await file.download_as_bytearray())
        except BadRequest as exc:
            if "too big" in str(exc).lower():
                await self._tell(incoming, too_big, "too-big")
                return None
            await self._tell(incoming, f"I could not fetch that {attachment.kind} from Telegram ({exc}).", "no-file")
            return None
        return await save_attachment(self._notes, attachment.name, data)

    async def _tell(self, incoming: Incoming, text: str, key: str) -> None:
        """Answer from the channel itself, through the outbox, once per update."""
        await tell(
            self._bus,
            channel=CHANNEL,
            conversation=conversation_of(incoming),
            recipient=str(incoming.chat_id),
            text=text,
            dedupe_key=f"tg:{incoming.update_id}:{key}",
        )


def compose_text(incoming: Incoming, attachment_path: str | None) -> str:
    """What the person wrote, as the model reads it: context first, then their words. Someone else's
    words (a forward, a quote of another's message) are not among them: see :func:`others_of`."""
    parts: list[str] = []
    if incoming.edited:
        parts.append(CORRECTION)
    if incoming.quoted and incoming.quoted_from is None:  # the person's own message
        parts.append(f"[Replying to: “{_cut(incoming.quoted)}”]")
    if attachment_path is not None and incoming.attachment is not None:
        what = incoming.attachment.kind.replace("_", " ").capitalize()
        parts.append(saved_line(what, attachment_path))
    if incoming.text and not incoming.forwarded_from:
        parts.append(incoming.text)
    return "\n".join(parts)


def others_of(incoming: Incoming) -> list[UntrustedPart]:
    """The words that came with the message but are someone else's: what it forwards, and the message
    it replies to or quotes unless the person typed it (another's, another chat's, a forward's, the
    bot's own). The runner shows them to the model as such (``bot.consent``)."""
    parts = []
    if incoming.quoted and incoming.quoted_from is not None:
        parts.append(UntrustedPart(source="quoted message", text=_cut(incoming.quoted), origin=incoming.quoted_from))
    if incoming.forwarded_from:
        parts.append(UntrustedPart(source="forwarded message", text=incoming.text, origin=incoming.forwarded_from))
    return parts


def _cut(quoted: str) -> str:
    return quoted if len(quoted) <= 500 else quoted[:500] + "…"


def recording_of(incoming: Incoming, attachment_path: str | None) -> Audio | None:
    """The stored recording the runner should transcribe, if the message is one."""
    attachment = incoming.attachment
    if attachment is None or attachment_path is None or attachment.kind not in RECORDINGS:
        return None
    return Audio(path=attachment_path, kind=attachment.kind, duration=attachment.duration)  # type: ignore[arg-type]


def document_of(incoming: Incoming, attachment_path: str | None) -> Document | None:
    """The stored document whose text the runner gives the model, if the message is one it can read."""
    attachment = incoming.attachment
    if attachment is None or attachment_path is None or attachment.kind != "document":
        return None
    return Document(path=attachment_path) if readable_document(attachment_path) else None


def attachments_of(incoming: Incoming, attachment_path: str | None) -> list[Attachment]:
    """The stored file the message brought, of any type, which undoing its run takes back."""
    attachment = incoming.attachment
    if attachment is None or attachment_path is None:
        return []
    kind = "image" if attachment.is_image else attachment.kind
    return [Attachment(path=attachment_path, kind=kind)]  # type: ignore[arg-type]


def images_of(incoming: Incoming, attachment_path: str | None) -> list[str]:
    """The stored image the runner should show the model, if the message brought one."""
    attachment = incoming.attachment
    return [attachment_path] if attachment is not None and attachment_path is not None and attachment.is_image else []


def conversation_of(incoming: Incoming) -> str:
    """The bus conversation of a Telegram chat."""
    return conversation_id(CHANNEL, incoming.chat_id)
