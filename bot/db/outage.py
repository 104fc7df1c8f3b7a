"""Riding out a database that is briefly unusable, in the loops that keep the bot going.

A bus worker's claims, acks and lease heartbeats and the reminders scheduler's passes run for the
life of the process; one of them raising ends every conversation. So, as arq's worker does, a loop
that meets a transient error in its own bookkeeping logs it, backs off and keeps going:
:func:`is_transient` tells those errors from the ones waiting cannot fix, which still surface, and
:class:`Outage` logs one line when a loop's streak of failures starts and one when it ends, and
says how long to back off in between.

Transient (the database comes back without anyone touching the code or the schema):
- SQLite's ``SQLITE_BUSY`` and ``SQLITE_LOCKED`` ("database is locked": another process held the
  write lock past the busy timeout), ``SQLITE_FULL`` ("database or disk is full"), ``SQLITE_IOERR``
  ("disk I/O error"), ``SQLITE_PROTOCOL`` (a WAL lock race) and ``SQLITE_READONLY`` (a file system
  briefly read-only), except ``SQLITE_READONLY_DBMOVED``: the file was deleted or moved under us.
- ``OSError``.

Everything else is permanent: a missing table (``SQLITE_ERROR``), a corrupt file, the database
closed, a bug in our code.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable

from bot.backoff import Backoff, describe

__all__ = ["Outage", "is_transient"]

log = logging.getLogger(__name__)

_TRANSIENT_SQLITE = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_PROTOCOL,
        sqlite3.SQLITE_READONLY,
    }
)


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` from the database may go away by waiting (see the module docstring)."""
    if isinstance(error, sqlite3.OperationalError):
        code = getattr(error, "sqlite_errorcode", None)
        if code is None or code == sqlite3.SQLITE_READONLY_DBMOVED:
            return False
        return code & 0xFF in _TRANSIENT_SQLITE  # the primary code, without the extended bits
    return isinstance(error, OSError)


class Outage:
    """One loop's streak of transient database failures: one warning when it starts, one line when
    it ends, and a bounded exponential backoff in between (``first`` seconds, doubling to ``most``).
    ``what`` names what was unusable in the line that ends it (a channel's store: the bus and the vault)."""

    def __init__(
        self,
        loop: str,
        *,
        what: str = "database",
        first: float = 0.1,
        most: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.loop = loop
        self.what = what
        self.failures = 0
        self._backoff = Backoff(first, most)
        self._clock = clock
        self._since = 0.0

    def failed(self, error: BaseException, doing: str) -> float:
        """Count a failure of ``doing`` (what the loop was doing, with what it means for the user);
        returns how many seconds to wait before trying again."""
        delay = self.count()
        if self.failures == 1:
            why = describe(error)
            log.warning("%s: database unavailable while %s (%s); retrying with backoff", self.loop, doing, why)
        else:
            log.debug("%s: database still unavailable while %s (%s)", self.loop, doing, describe(error))
        return delay

    def count(self) -> float:
        """Count a failure its loop tells of in its own words (a channel says each time what waits, and
        where); returns how many seconds to wait before trying again."""
        self.failures += 1
        if self.failures == 1:
            self._since = self._clock()
        return self._backoff.delay(self.failures)

    def recovered(self) -> None:
        """Note a success: ends the streak, if there was one, with one line."""
        if self.failures:
            took = self._clock() - self._since
            # At the warning's level, so whoever saw the outage start (WARNING is the default) sees it end.
            log.warning("%s: %s usable again after %d failure(s) over %.1fs", self.loop, self.what, self.failures, took)
            self.failures = 0
