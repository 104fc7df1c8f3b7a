"""The "typing…" indicator, from the moment a message arrives until its reply is sent."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from telegram import Bot
from telegram.error import TelegramError

from bot.bus import INBOUND, Bus

log = logging.getLogger(__name__)


class Typing:
    """Shows "typing…" in chats, refreshed every ``interval`` seconds while work is pending."""

    def __init__(self, bot: Bot, bus: Bus, *, interval: float, max_seconds: float = 600.0) -> None:
        self._bot = bot
        self._bus = bus
        self._interval = interval
        self._max_seconds = max_seconds
        self._chats: dict[int, tuple[asyncio.Task[None], asyncio.Event]] = {}

    def start(self, chat_id: int, conversation: str) -> None:
        """Begin (or keep) showing the indicator in ``chat_id``."""
        if chat_id in self._chats:
            return
        done = asyncio.Event()
        task = asyncio.create_task(self._show(chat_id, conversation, done))
        self._chats[chat_id] = (task, done)
        task.add_done_callback(lambda _: self._chats.pop(chat_id, None))

    def stop(self, chat_id: int) -> None:
        """The reply went out: stop the indicator."""
        entry = self._chats.get(chat_id)
        if entry is not None:
            entry[1].set()

    async def close(self) -> None:
        """Stop every indicator."""
        tasks = [task for task, _ in self._chats.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _show(self, chat_id: int, conversation: str, done: asyncio.Event) -> None:
        deadline = time.monotonic() + self._max_seconds
        while time.monotonic() < deadline:
            try:
                await self._bot.send_chat_action(chat_id, "typing")
            except TelegramError as exc:
                log.info("telegram: typing indicator failed (%s)", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), self._interval)
                return
            # Refreshed only while the conversation still has work on the bus.
            if not await self._bus.unfinished(INBOUND, conversation):
                return
