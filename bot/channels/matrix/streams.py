"""Long replies shown as they are written: one message, edited (``m.replace``) as the text grows.

A run's reply that passes :data:`LONG` characters is sent as a message of its own, then edited at
most every ``interval`` seconds; when the reply itself comes through the outbox, it replaces that
message by a last edit instead of arriving a second time (:meth:`Streams.settle` first waits for an
edit in flight and stops any more). Progress is ephemeral (``bot.streaming``): after a crash a shown
message is found again in the store and the re-run's reply replaces it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

from nio import AsyncClient, RoomSendResponse

from bot.store import Store
from bot.streaming import Draft, Progress

log = logging.getLogger(__name__)

CHANNEL = "matrix"
# Replies shorter than this arrive whole: a message edited for a sentence or two would only flicker.
LONG = 200
WRITING = " …"


def draft_key(inbound: str) -> str:
    """The store's key of the message showing the reply to inbound message ``inbound``."""
    return f"matrix-draft:{inbound}"


@dataclass
class _Shown:
    room: str
    event_id: str | None = None
    last: float = 0.0
    closed: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class Streams:
    """Shows the drafts of runs on the Matrix channel until :meth:`run` is cancelled."""

    def __init__(self, client: AsyncClient, progress: Progress, store: Store, *, interval: float = 1.0) -> None:
        self._client = client
        self._store = store
        self._interval = interval
        self._shown: dict[str, _Shown] = {}
        # Subscribed at once, before the runner starts: a run begun at start (a redelivery) is seen too.
        self._subscription = progress.subscribe(CHANNEL)

    async def run(self) -> None:
        """Edit the shown messages as their drafts change."""
        with self._subscription as subscription, contextlib.suppress(asyncio.CancelledError):
            while True:
                for draft in await subscription.changes():
                    await self._changed(draft)

    async def _changed(self, draft: Draft) -> None:
        shown = self._shown.setdefault(draft.key, _Shown(draft.recipient))
        if draft.done or draft.working or shown.closed or len(draft.text) < LONG:
            return
        if time.monotonic() - shown.last < self._interval or shown.lock.locked():
            return  # the next change after the interval shows the latest text
        async with shown.lock:
            if shown.closed:
                return
            shown.last = time.monotonic()
            try:
                await self._show(draft.key, shown, draft.text + WRITING)
            except Exception:  # a draft is a courtesy: the reply goes out through the outbox whatever happens
                log.warning("matrix: could not show the reply to %s as it is written", draft.key, exc_info=True)

    async def _show(self, key: str, shown: _Shown, text: str) -> None:
        if shown.event_id is None:
            content = {"msgtype": "m.text", "body": text}
            answer = await self._client.room_send(
                shown.room, "m.room.message", content, tx_id=f"vaultbot.draft.{key}", ignore_unverified_devices=True
            )
            if isinstance(answer, RoomSendResponse):
                shown.event_id = answer.event_id
                await self._store.remember_sent(draft_key(key), shown.room, answer.event_id)
            return
        content = edit(shown.event_id, {"msgtype": "m.text", "body": text})
        await self._client.room_send(shown.room, "m.room.message", content, ignore_unverified_devices=True)

    async def settle(self, key: str) -> str | None:
        """Before the reply to inbound message ``key`` is sent: wait for an edit in flight, show no more,
        and say which message shows the reply so far (None: none, the reply is sent as a new message)."""
        shown = self._shown.pop(key, None)
        if shown is not None:
            shown.closed = True
            async with shown.lock:
                pass
        where = await self._store.sent(draft_key(key))
        return where[1] if where is not None else None


def edit(event_id: str, content: dict[str, str]) -> dict[str, object]:
    """The content of an edit that makes event ``event_id`` read ``content`` (a fallback body for clients
    that do not show edits, as the specification has it)."""
    fallback = {key: f"* {value}" if key in ("body", "formatted_body") else value for key, value in content.items()}
    return {**fallback, "m.new_content": content, "m.relates_to": {"rel_type": "m.replace", "event_id": event_id}}
