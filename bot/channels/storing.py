"""Riding out a store that cannot take what a channel received, for a while (a full disk, a database
locked past its busy timeout, an attachment that cannot be saved).

What came stays with the service meanwhile (Telegram delivers an unconfirmed update again, a mail stays
unseen), so nothing is lost: the channel says so in one line at each failure, waits with backoff and
tries again, and says in one more line when storing works again. The streak and its backoff are
:class:`bot.db.Outage`'s, as in every loop that rides out the database.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Awaitable, Callable

from bot.backoff import describe
from bot.db import Outage
from vault import VaultError

__all__ = ["STORE_ERRORS", "StoreOutage"]

log = logging.getLogger(__name__)

# What storing a received message can fail with for a while; a channel adds its service's own errors
# (Telegram unreachable while a file is fetched).
STORE_ERRORS = (sqlite3.Error, OSError, VaultError)


class StoreOutage:
    """One channel's streak of failures to store what it received; ``pause`` waits between tries (and
    returns early when the channel stops receiving)."""

    def __init__(self, channel: str, pause: Callable[[float], Awaitable[None]]) -> None:
        self._channel = channel
        self._pause = pause
        self._outage = Outage(channel, what="the store", first=1.0, most=60.0)

    async def failed(self, what: str, error: BaseException, kept: str) -> None:
        """Say that ``what`` could not be stored and ``kept`` (where it waits meanwhile), then wait
        before the next try."""
        delay = self._outage.count()
        log.warning(
            "%s: could not store %s (%s); %s, trying again in %.1fs", self._channel, what, describe(error), kept, delay
        )
        await self._pause(delay)

    def stored(self) -> None:
        """Note a success: ends the streak, if there was one, with one line."""
        self._outage.recovered()
