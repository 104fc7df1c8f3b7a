"""What slows down and forgets: failed sign-in attempts, and codes and init data already used.

Both are kept in memory, on the one clock the page was given, and stay bounded: a throttle is two
numbers per client that failed lately, and a used key is forgotten once it would have expired anyway.
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
    """Failed attempts to sign in with the token, each client (its address) on its own: five wrong
    tokens a second from anyone else never hold up the owner. While :meth:`wait` is above 0 for a
    client the page checks no token of that client's: not even the right one, or a refusal that took
    longer would tell a guesser that one was right. Sign-in links and Telegram's init data are signed
    (nothing to guess): they are checked whatever the wait, and their refusals count all the same."""

    def __init__(self, clock: Callable[[], float], *, burst: int = FAILURE_BURST, interval: float = FAILURE_INTERVAL):
        self._clock = clock
        self._burst = float(burst)
        self._interval = interval
        self._clients: dict[str, tuple[float, float]] = {}  # client: (allowance, when it was reckoned)

    def _allowance(self, client: str) -> float:
        now = self._clock()
        allowance, at = self._clients.get(client, (self._burst, now))
        return min(self._burst, allowance + max(0.0, now - at) / self._interval)

    def wait(self, client: str) -> int:
        """Whole seconds until ``client``'s next token may be checked (0: now)."""
        allowance = self._allowance(client)
        return 0 if allowance >= 1 else math.ceil((1 - allowance) * self._interval)

    def failed(self, client: str) -> None:
        """An attempt of ``client``'s was checked and was wrong."""
        now = self._clock()
        # Clients back to a full allowance are forgotten: the memory stays bounded by the guessers of the last minute.
        self._clients = {c: (a, t) for c, (a, t) in self._clients.items() if self._allowance(c) < self._burst}
        self._clients[client] = (self._allowance(client) - 1, now)


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
