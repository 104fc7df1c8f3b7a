"""Retrying after a failure: how long to wait (one exponential backoff for every loop that retries),
and the failure in one line for the log line, the retry or the dead letter that says so."""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Backoff", "describe"]

# Doubling stops here: 2**64 times any first delay is past every cap, and an outage that lasts longer
# (some 1,000 failures) would otherwise overflow a float and crash the loop that was waiting it out.
_MAX_DOUBLINGS = 64


@dataclass(frozen=True)
class Backoff:
    """``first`` seconds after the first failure in a row, doubling after each one, never more than
    ``most``; with ``jitter``, a random 50–100 % of that, so failures do not come back in lockstep."""

    first: float
    most: float
    jitter: bool = False

    def delay(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th failure in a row (1 for the first)."""
        delay = min(self.most, self.first * 2 ** min(max(failures - 1, 0), _MAX_DOUBLINGS))
        return delay * random.uniform(0.5, 1.0) if self.jitter else delay


def describe(error: BaseException) -> str:
    """``OperationalError: disk I/O error``, or the type alone when the error has no message."""
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
