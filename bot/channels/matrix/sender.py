"""Sending: the outbox and run events to Matrix rooms, Markdown rendered to ``org.matrix.custom.html``.

Idempotent across retries and crashes: each message is sent with a transaction id fixed per outbox
message, and the homeserver takes a second send with the same id (from the same device) as the first,
answering with the same event. A 429 is obeyed: the outbox tries again after the ``retry_after_ms``
the homeserver asked for.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from nio import AsyncClient, ErrorResponse, RoomSendResponse

from bot.bus import Bus, Decision, Delivery, Fatal, OutboundMessage, Retry
from bot.channels.html import markdown_html
from bot.channels.matrix.receiver import question_key
from bot.channels.matrix.streams import Streams, edit
from bot.channels.notices import event_notice
from bot.channels.outbox import log_undeliverable
from bot.store import Store

log = logging.getLogger(__name__)

HOW_TO_ANSWER = "React ✅ to allow it once or ❌ to deny it (or reply allow or deny). A new message declines it."
# Statuses of a send that trying again will not change.
REFUSED = {"M_FORBIDDEN", "M_UNKNOWN_TOKEN", "M_NOT_FOUND", "M_BAD_JSON", "M_NOT_JSON", "M_TOO_LARGE"}


class MatrixSender:
    """The handlers of the channel's outbound and events workers."""

    def __init__(self, client: AsyncClient, *, bus: Bus, store: Store, streams: Streams | None = None) -> None:
        """``streams``, when replies are shown as they are written, are settled before a run's reply."""
        self._client = client
        self._streams = streams
        self._bus = bus
        self._store = store

    async def deliver(self, delivery: Delivery) -> None:
        """Send one outbound message; a question for consent says how to answer it, and a decision is
        told as a reply to its question."""
        message = delivery.parse(OutboundMessage)
        room = message.recipient
        tx_id = f"vaultbot.{delivery.id}.{message.in_reply_to or 'notice'}.{message.sequence}"
        if message.decision is not None:
            await self._decided(room, message.decision, tx_id)
            return
        text = message.text
        if message.button is not None:  # no buttons here: the address on a line of its own
            text = f"{text}\n\n{message.button.text}: {message.button.url}"
        if message.question is not None:
            text = f"{text}\n\n{HOW_TO_ANSWER}"
        kind = "m.text" if message.kind == "reply" else "m.notice"
        content = _content(text, kind)
        if message.kind == "reply" and message.question is None and message.in_reply_to is not None:
            shown = await self._shown(message.in_reply_to, delivery.id)
            if shown is not None:  # the reply so far is on screen: it becomes the reply
                content = edit(shown, content)
        event_id = await self._send(room, content, tx_id)
        if message.question is not None:
            await self._store.remember_sent(question_key(event_id), room, message.question)
            await self._store.remember_sent(f"question:{message.question}", room, event_id)
        if message.kind == "reply":
            with contextlib.suppress(Exception):  # "typing…" is a courtesy; a reply is sent without it
                await self._client.room_typing(room, typing_state=False)

    async def _shown(self, inbound: str, delivery: int) -> str | None:
        """The message showing the reply to ``inbound`` as it was written, if this delivery is the run's
        first reply (the one that replaces it; a retry of it replaces it again, with the same edit)."""
        if self._streams is None:
            return None
        shown = await self._streams.settle(inbound)
        if shown is None:
            return None
        await self._store.remember_sent(f"matrix-draft-replaced:{inbound}", "", str(delivery))
        replaced = await self._store.sent(f"matrix-draft-replaced:{inbound}")
        return shown if replaced is not None and replaced[1] == str(delivery) else None

    async def undeliverable(self, delivery: Delivery, error: BaseException) -> None:
        """A reply the homeserver would not take, after every attempt: never hidden, it goes in the log."""
        await log_undeliverable(self._store, delivery, error, how="delivered to Matrix room")

    async def tell(self, delivery: Delivery) -> None:
        """Show the user the one-line notice of a run's event, if it has one."""
        notice = event_notice(delivery)
        if notice is not None:
            await self._send(notice.recipient, _content(notice.text, "m.notice"), f"vaultbot.event.{delivery.id}")

    async def _decided(self, room: str, decision: Decision, tx_id: str) -> None:
        content = _content(decision.text, "m.notice")
        asked = await self._store.sent(f"question:{decision.question}")
        if asked is not None:
            content["m.relates_to"] = {"m.in_reply_to": {"event_id": asked[1]}}
        await self._send(room, content, tx_id)

    async def _send(self, room: str, content: dict[str, Any], tx_id: str) -> str:
        # Encrypted rooms: sent to every device of the room's members; the person verifies the bot, not the
        # other way round (a bot has no one to compare emoji with).
        answer = await self._client.room_send(
            room, "m.room.message", content, tx_id=tx_id, ignore_unverified_devices=True
        )
        if isinstance(answer, RoomSendResponse):
            return answer.event_id
        assert isinstance(answer, ErrorResponse)
        if answer.status_code == "M_LIMIT_EXCEEDED":
            delay = (answer.retry_after_ms or 5000) / 1000
            raise Retry(delay=delay, reason="the homeserver asked to slow down")
        if answer.status_code in REFUSED:
            raise Fatal(f"the homeserver refused the message: {answer}")
        raise RuntimeError(f"the homeserver did not take the message: {answer}")


def _content(text: str, kind: str) -> dict[str, Any]:
    return {
        "msgtype": kind,
        "body": text,
        "format": "org.matrix.custom.html",
        "formatted_body": markdown_html(text).strip(),
    }
