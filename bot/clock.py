"""The user's clock: one ``now()`` and one time zone, passed down from the app.

Everything that asks "what day is it?" (the daily budget, usage per day, capture mode's daily note)
asks this clock, so midnight and DST are tests with an injected ``now``, not waits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo

__all__ = ["Clock", "day_bounds"]


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Clock:
    """``now`` returns an aware instant; ``tz`` is the user's zone (``VAULTBOT_TIMEZONE``)."""

    tz: tzinfo
    now_utc: Callable[[], datetime] = field(default=_utc_now)

    def now(self) -> datetime:
        """The current instant in the user's zone."""
        return self.now_utc().astimezone(self.tz)


def day_bounds(day: date, tz: tzinfo) -> tuple[datetime, datetime]:
    """The UTC instants at which ``day`` starts and the next day starts in ``tz``.

    A day is 23 or 25 hours long across a DST change; this follows the zone's own rules.
    """
    start = datetime.combine(day, time(0), tzinfo=tz)
    end = datetime.combine(day + timedelta(days=1), time(0), tzinfo=tz)
    return start.astimezone(UTC), end.astimezone(UTC)
