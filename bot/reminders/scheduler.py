"""The loop that fires reminders when they come due, beside the runner's workers."""

from __future__ import annotations

import asyncio

from bot.db import Outage, is_transient
from bot.reminders.book import ReminderBook

__all__ = ["Scheduler"]


class Scheduler:
    """Fires due reminders; sleeps until the next one, but never longer than ``poll_interval``,
    so a reminder scheduled by another process on the same store is seen within that time."""

    def __init__(self, book: ReminderBook, *, poll_interval: float = 0.5) -> None:
        self._book = book
        self._poll = poll_interval
        self._wake = asyncio.Event()
        self._stopping = False

    def wake(self) -> None:
        """Look again now (a reminder was just scheduled in this process)."""
        self._wake.set()

    async def run(self) -> None:
        """Fire due reminders until :meth:`stop`.

        A database that is briefly unusable (locked by another process, disk full) is logged once
        and tried again with backoff; nothing is lost or fired twice, as each occurrence is moved on
        in the transaction that publishes it. Any other error ends the loop with that error.
        """
        outage = Outage("reminders scheduler")
        while not self._stopping:
            self._wake.clear()
            try:
                await self._book.fire_due()
                due_in = await self._book.next_due_in()
            except Exception as exc:
                if not is_transient(exc):
                    raise
                timeout = outage.failed(exc, "firing due reminders")
            else:
                outage.recovered()
                timeout = self._poll if due_in is None else min(self._poll, due_in)
            try:
                await asyncio.wait_for(self._wake.wait(), max(timeout, 0.001))
            except TimeoutError:
                pass

    async def stop(self, grace: float = 0.0) -> None:
        """Stop after the current pass; ``grace`` is accepted so it stops like a worker."""
        self._stopping = True
        self._wake.set()
