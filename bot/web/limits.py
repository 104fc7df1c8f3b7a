"""What slows down and forgets: failed sign-in attempts, and codes and init data already used.

Both are kept in memory, on the one clock the page was given, and stay bounded: a throttle is two
numbers, and a used key is forgotten once it would have expired anyway.
"""

from __future__ import annotations

import math
from collections.abc import Callable

__all__ = ["FAILURE_BURST", "FAILURE_INTERVAL", "Once", "Throttle"]

# Failed attempts checked at once before the page slows down, then one every FAILURE_INTERVAL seconds:
# a person who mistypes is never held up, a guesser gets 30 tries a minute, however many addresses it has.
FAILURE_BURST = 10
FAILURE_INTERVAL = 2.0


class Throttle:
    """Failed attempts to sign in (a token, a link, Telegram's init data), of every client together.
    While :meth:`wait` is above 0 the page checks no credential at all: not even the right one, or a
    refusal that took longer would tell a guesser that one was right. A signed-in session is not held up."""

    def __init__(self, clock: Callable[[], float], *, burst: int = FAILURE_BURST, interval: float = FAILURE_INTERVAL):
        self._clock = clock
        self._burst = float(burst)
        self._interval = interval
        self._allowance = float(burst)
        self._at = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._allowance = min(self._burst, self._allowance + max(0.0, now - self._at) / self._interval)
        self._at = now

    def wait(self) -> int:
        """Whole seconds until the next attempt may be checked (0: now)."""
        self._refill()
        return 0 if self._allowance >= 1 else math.ceil((1 - self._allowance) * self._interval)

    def failed(self) -> None:
        """An attempt was checked and was wrong."""
        self._refill()
        self._allowance -= 1


class Once:
    """Keys seen, each until a time after which it would be refused anyway (so the memory stays bounded)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._until: dict[str, float] = {}

    def seen(self, key: str) -> bool:
        """``key`` was offered and is still kept."""
        return self._until.get(key, 0.0) > self._clock()

    def first(self, key: str, until: float) -> bool:
        """True the first time ``key`` is offered (it is then kept until ``until``), False after."""
        now = self._clock()
        self._until = {k: t for k, t in self._until.items() if t > now}
        if key in self._until:
            return False
        self._until[key] = until
        return True
