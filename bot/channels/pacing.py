"""Pacing what a channel sends to one recipient, so a service's limit (or a loop that slipped past every
other guard) makes replies wait in the outbox rather than fail or flood: none is dropped.

Telegram takes about one message a second to one chat (``Pacer(1.0)``: keeping under it beats collecting
429s); e-mail sends at most 30 mails a minute to one address (``Pacer(most=30, per=60)``, the default).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable

__all__ = ["Pacer"]


class Pacer:
    """At most ``most`` messages to one recipient in any ``per`` seconds; the next waits until the oldest
    of them is ``per`` seconds old. ``Pacer(every)`` is one message per ``every`` seconds (0: no pacing).
    ``clock`` and ``sleep`` are the real ones unless a test gives its own, so the pacing itself can be
    checked apart from the machine's speed."""

    def __init__(
        self,
        every: float | None = None,
        *,
        most: int = 30,
        per: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        if every is not None:
            most, per = 1, every
        if most < 1 or per < 0:
            raise ValueError(f"a pace of {most} message(s) per {per} s lets nothing through")
        self.most = most
        self.per = per
        self._clock = clock
        self._sleep = sleep
        self._sent: dict[Hashable, deque[float]] = {}

    async def wait(self, recipient: Hashable) -> None:
        """Return when one more message to ``recipient`` keeps within the pace (and count it as sent)."""
        sent = self._sent.setdefault(recipient, deque())
        while True:
            now = self._clock()
            while sent and now - sent[0] >= self.per:
                sent.popleft()
            if len(sent) < self.most:
                break
            await self._sleep(sent[0] + self.per - now)
        sent.append(self._clock())
