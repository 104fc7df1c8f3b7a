"""Sending: the outbox and run events to Telegram, rendered, split, paced, resumable.

Idempotent across retries: each chunk sent is recorded on the bus (``bus_progress``), and a retry
resumes after the last recorded chunk.
"""

from __future__ import annotations

import contextlib
import logging

from telegram import (
    Bot,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    LinkPreviewOptions,
    Message,
    MessageEntity,
    WebAppInfo,
)
from telegram.error import BadRequest, Forbidden, RetryAfter

from bot.bus import Bus, Button, Decision, Delivery, Fatal, OutboundMessage, Retry
from bot.channels.notices import event_notice
from bot.channels.outbox import log_undeliverable
from bot.channels.pacing import Pacer
from bot.channels.telegram.drafts import Drafts
from bot.channels.telegram.errors import formatting_refused, retry_after_seconds
from bot.channels.telegram.indicator import Typing
from bot.channels.telegram.render import Chunk, plain, render
from bot.channels.telegram.updates import consent_data
from bot.store import Store

log = logging.getLogger(__name__)


class TelegramSender:
    """The handlers of the channel's outbound and events workers."""

    def __init__(
        self,
        bot: Bot,
        *,
        bus: Bus,
        store: Store,
        typing: Typing,
        pace: Pacer,
        drafts: Drafts | None = None,
    ) -> None:
        """``drafts``, when shown, are settled before a run's reply goes out."""
        self._bot = bot
        self._drafts = drafts
        self._bus = bus
        self._store = store
        self._typing = typing
        self._pace = pace

    async def deliver(self, delivery: Delivery) -> None:
        """Send one outbound message, chunk by chunk; a retry resumes after the last chunk sent. A
        question for consent gets Allow and Deny buttons; a decision edits them instead of sending."""
        message = delivery.parse(OutboundMessage)
        chat_id = int(message.recipient)
        if message.decision is not None:
            await self._show(message.decision)
            return
        # A question is shown as the plain text it is, in one message with its buttons (bot.consent.shown).
        chunks = [plain(message.text)] if message.question is not None else render(message.text)
        if self._drafts is not None and message.in_reply_to is not None:
            await self._drafts.settle(message.in_reply_to)
        for index in range(await self._bus.progress(delivery.id), len(chunks)):
            await self._pace.wait(chat_id)
            # A button goes under the last part of the message, where reading ends.
            last = index == len(chunks) - 1
            markup = _keyboard(message.button, message.question) if last else None
            sent = await self._send(chat_id, chunks[index], markup, preview=message.preview)
            if last and message.question is not None:
                await self._store.remember_sent(_question_key(message.question), str(chat_id), str(sent.message_id))
            await self._bus.set_progress(delivery.id, index + 1)
        if message.kind == "reply" and not self._still_working(message):
            self._typing.stop(chat_id)

    def _still_working(self, message: OutboundMessage) -> bool:
        # A send_message reply while its run goes on: "typing…" stays up for the rest of the run.
        return (
            self._drafts is not None and message.in_reply_to is not None and self._drafts.running(message.in_reply_to)
        )

    async def undeliverable(self, delivery: Delivery, error: BaseException) -> None:
        """A reply Telegram would not take, after every attempt: never hidden, it goes in the log."""
        await log_undeliverable(self._store, delivery, error, how="delivered to Telegram chat")

    async def tell(self, delivery: Delivery) -> None:
        """Show the user the one-line notice of a run's event, if it has one."""
        notice = event_notice(delivery)
        if notice is not None:
            chat_id = int(notice.recipient)
            await self._pace.wait(chat_id)
            await self._send(chat_id, Chunk(notice.text))

    async def _show(self, decision: Decision) -> None:
        """Answer the tap that decided a question, and turn its buttons into one that says the decision
        (a tap on it is told again). Either may be gone (a tap answered late, a message deleted)."""
        if decision.tap is not None:
            with contextlib.suppress(BadRequest):
                await self._bot.answer_callback_query(decision.tap, decision.text)
        where = await self._store.sent(_question_key(decision.question))
        if where is None:
            return
        shown = InlineKeyboardButton(decision.text, callback_data=consent_data(decision.question, "shown"))
        with contextlib.suppress(BadRequest):  # "message is not modified": shown already
            await self._bot.edit_message_reply_markup(
                int(where[0]), int(where[1]), reply_markup=InlineKeyboardMarkup([[shown]])
            )

    async def _send(
        self, chat_id: int, chunk: Chunk, markup: InlineKeyboardMarkup | None = None, *, preview: str | None = None
    ) -> Message:
        entities = [MessageEntity(**e) for e in chunk.entities] or None
        # No preview but of an address the person sent: Telegram would fetch any other one the model wrote.
        links = (
            LinkPreviewOptions(url=preview)
            if preview and preview in chunk.text
            else LinkPreviewOptions(is_disabled=True)
        )
        try:
            return await self._bot.send_message(
                chat_id, chunk.text, entities=entities, reply_markup=markup, link_preview_options=links
            )
        except RetryAfter as exc:
            raise Retry(delay=retry_after_seconds(exc), reason="Telegram asked to slow down") from exc
        except BadRequest as exc:
            if entities is None or not formatting_refused(exc):
                raise Fatal(f"Telegram refused the message: {exc}") from exc
            log.warning("telegram: formatting refused (%s); sending as plain text", exc)
            return await self._bot.send_message(chat_id, chunk.text, reply_markup=markup, link_preview_options=links)
        except Forbidden as exc:
            raise Fatal(f"Telegram will not deliver to chat {chat_id}: {exc}") from exc


def _keyboard(button: Button | None, question: str | None) -> InlineKeyboardMarkup | None:
    """``button`` as Telegram shows a web page in the chat (an inline ``web_app`` button), and a
    question's ``Allow`` and ``Deny``."""
    rows = []
    if button is not None:
        rows.append([InlineKeyboardButton(button.text, web_app=WebAppInfo(button.url))])
    if question is not None:
        rows.append(
            [
                InlineKeyboardButton("Allow", callback_data=consent_data(question, "allow")),
                InlineKeyboardButton("Deny", callback_data=consent_data(question, "deny")),
            ]
        )
    return InlineKeyboardMarkup(rows) if rows else None


def _question_key(question: str) -> str:
    return f"question:{question}"
