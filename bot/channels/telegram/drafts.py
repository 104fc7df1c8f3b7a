"""Replies shown in Telegram as they are written: the runs' progress as message drafts.

Best effort by design. The reply itself goes through the outbox (formatted, split, sent once); a
draft only previews it. Telegram shows a draft at the bottom of a private chat until the bot sends
a message there or about 30 seconds pass, so the real message replaces it and a draft outlives a
crash by half a minute at most. Drafts of one run are at least ``interval`` apart, and the latest
text wins over any it skipped; after a 429 a chat gets no drafts for as long as Telegram asks, and
a failed draft is dropped, never retried. Drafts use their own connections and no rate limiter,
so they never hold up a real message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import zlib
from dataclasses import dataclass, field

from telegram import Bot, MessageEntity
from telegram.error import BadRequest, Forbidden, RetryAfter, TelegramError

from bot.channels.telegram.errors import formatting_refused, retry_after_seconds
from bot.channels.telegram.receiver import CHANNEL
from bot.channels.telegram.render import Chunk, render
from bot.streaming import Draft, Progress

log = logging.getLogger(__name__)

# How long a reply waits for a draft request already on the wire, so that draft cannot land after it.
SETTLE_SECONDS = 2.0
REQUEST_TIMEOUT = 5.0


def draft_id(key: str) -> int:
    """A stable, non-zero id per inbound message: a re-run after a crash updates the same draft."""
    return zlib.crc32(key.encode()) % (2**31 - 1) + 1


def preview(text: str) -> Chunk | None:
    """What a draft shows: the last message the reply would be split into so far, formatted as it
    will be (so it always fits Telegram's limit), or None when there is nothing to show yet."""
    return render(text)[-1] if text.strip() else None


@dataclass(eq=False)
class _Stream:
    """The drafts of one run in one chat."""

    draft: Draft
    chat_id: int
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    next_at: float = 0.0
    shown: str = ""
    plain: bool = False  # Telegram refused the formatting: plain text from then on

    def close(self) -> None:
        """No more drafts; wakes the task wherever it waits."""
        self.closed.set()
        self.changed.set()


class Drafts:
    """Shows the replies of runs on the Telegram channel as they are written (``sendMessageDraft``)."""

    def __init__(
        self,
        bot: Bot,
        progress: Progress,
        *,
        interval: float,
    ) -> None:
        self._bot = bot
        self._progress = progress
        # Subscribed now, when the channel is built: before the runner can start a run.
        self._subscription = progress.subscribe(CHANNEL)
        self._interval = interval
        self._streams: dict[str, _Stream] = {}  # by the run's inbound message id
        self._paused: dict[int, float] = {}  # chat id → no drafts before this time (after a 429)

    async def run(self) -> None:
        """Show drafts until cancelled."""
        with self._subscription as subscription:
            try:
                while True:
                    for draft in await subscription.changes():
                        self._changed(draft)
            finally:
                for stream in self._streams.values():
                    stream.close()
                tasks = [s.task for s in self._streams.values() if s.task is not None]
                await asyncio.gather(*tasks, return_exceptions=True)

    def running(self, key: str) -> bool:
        """True while the run on inbound message ``key`` is still being written."""
        return self._progress.live(key) is not None

    async def settle(self, key: str) -> None:
        """Called before a reply to inbound message ``key`` is sent: no draft of that run goes out
        after this returns, so none can reappear after the real message."""
        stream = self._streams.get(key)
        if stream is None:
            draft = self._progress.live(key)
            if draft is None:
                return
            stream = self._streams[key] = _Stream(draft, chat_id=0)
        stream.close()
        if stream.task is not None and not stream.task.done():
            _, pending = await asyncio.wait({stream.task}, timeout=SETTLE_SECONDS)
            for task in pending:
                log.warning(
                    "telegram: a draft to chat %s still pending after %.0fs; cancelled", stream.chat_id, SETTLE_SECONDS
                )
                task.cancel()

    def _changed(self, draft: Draft) -> None:
        chat_id = _chat_id(draft.recipient)
        if chat_id is None:
            return
        stream = self._streams.get(draft.key)
        if stream is not None and stream.draft is draft:
            if draft.done:
                stream.close()
                self._forget(stream)
            else:
                stream.changed.set()
            return
        if stream is not None:  # a run before this one on the same message (a retry)
            stream.close()
        if draft.done or chat_id <= 0:  # Telegram shows drafts in private chats only
            return
        stream = self._streams[draft.key] = _Stream(draft, chat_id)
        stream.task = asyncio.create_task(self._show(stream))
        stream.task.add_done_callback(lambda _: self._forget(stream))
        stream.changed.set()

    def _forget(self, stream: _Stream) -> None:
        # Kept while its run lives (so a settled run is not drafted again) and while a draft of it
        # may be on the wire (so settle can wait for it).
        if stream.draft.done and (stream.task is None or stream.task.done()):
            if self._streams.get(stream.draft.key) is stream:
                del self._streams[stream.draft.key]

    async def _show(self, stream: _Stream) -> None:
        while True:
            await stream.changed.wait()
            stream.changed.clear()
            if stream.closed.is_set():
                return
            wait = max(stream.next_at, self._paused.get(stream.chat_id, 0.0)) - time.monotonic()
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stream.closed.wait(), wait)
            if stream.closed.is_set():
                return
            chunk = preview(stream.draft.text)  # the latest text, however much arrived meanwhile
            if chunk is None or chunk.text == stream.shown:
                continue
            stream.next_at = time.monotonic() + self._interval
            if not await self._send(stream, chunk):
                return
            stream.shown = chunk.text

    async def _send(self, stream: _Stream, chunk: Chunk) -> bool:
        """Send one draft; False when this run should get no more."""
        entities = None if stream.plain else [MessageEntity(**e) for e in chunk.entities] or None
        chat_id = stream.chat_id
        try:
            await self._bot.send_message_draft(
                chat_id,
                draft_id(stream.draft.key),
                chunk.text,
                entities=entities,
                read_timeout=REQUEST_TIMEOUT,
                write_timeout=REQUEST_TIMEOUT,
                connect_timeout=REQUEST_TIMEOUT,
            )
        except RetryAfter as exc:
            pause = retry_after_seconds(exc)
            self._paused[chat_id] = time.monotonic() + pause
            log.info("telegram: drafts to chat %s paused %.0fs (Telegram asked to slow down)", chat_id, pause)
        except BadRequest as exc:
            if entities is None or not formatting_refused(exc):
                log.info("telegram: no drafts for this reply in chat %s (%s)", chat_id, exc)
                return False
            stream.plain = True
            stream.changed.set()  # shown again, plain, at the next turn
        except Forbidden:
            return False
        except TelegramError as exc:
            log.info("telegram: a draft to chat %s failed (%s); the next one may pass", chat_id, exc)
        except Exception:  # a preview must never cost the reply: logged, and this run gets no more drafts
            log.exception("telegram: drafts to chat %s stopped", chat_id)
            return False
        return True


def _chat_id(recipient: str) -> int | None:
    try:
        return int(recipient)
    except ValueError:
        return None
