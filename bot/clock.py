"""The user's clock: one ``now()`` and one time zone, passed down from the app.

Everything that asks "what day is it?" (the daily budget, usage per day, capture mode's daily note)
asks this clock, so midnight and DST are tests with an injected ``now``, not waits.

It also stamps messages for the model: each user message it reads starts with the local time it
was sent (:func:`stamped`), and :func:`unstamp` takes such stamps out again wherever text goes
back to the user or into a note.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta, tzinfo

__all__ = ["Clock", "day_bounds", "local_time", "stamp", "stamped", "unstamp", "zone_name"]


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


# English day names whatever the locale, so the stamp reads the same everywhere.
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_STAMP = re.compile(
    r"^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d{4}-\d{2}-\d{2} \d{2}:\d{2} [+-]\d{2}:\d{2}\] ?", re.MULTILINE
)


def stamp(moment: datetime, tz: tzinfo) -> str:
    """``moment`` in ``tz`` to the minute, with its UTC offset: ``[Mon 2026-11-23 14:05 +01:00]``.

    The offset keeps it unambiguous across DST (the hour that happens twice), the weekday makes
    "next Monday" easy, and the minute is all a person means by "in 10 minutes".
    """
    local = moment.astimezone(tz)
    offset = local.strftime("%z")
    return f"[{_DAYS[local.weekday()]} {local:%Y-%m-%d %H:%M} {offset[:3]}:{offset[3:5]}]"


def stamped(text: str, moment: datetime, tz: tzinfo) -> str:
    """A user's message as the model reads it: the time it was sent, then what they wrote."""
    return f"{stamp(moment, tz)} {text}"


def unstamp(text: str) -> str:
    """``text`` without the stamps at the start of its lines: what the user actually wrote."""
    return _STAMP.sub("", text)


def local_time(moment: datetime | str | None, tz: tzinfo, *, seconds: bool = False, day: bool = True) -> str:
    """An instant as a person reads it: in ``tz``, saying which zone (``2026-01-15 13:31 CET``,
    ``2026-07-15 13:31 CEST``). ``moment`` may be the stored ISO text (UTC when it names no offset);
    None is ``-``. Every time shown to a person goes through here, so none reads as another zone's.

    The abbreviation is the zone's own for that instant (DST included); a zone without one shows
    its offset (``-03``), as ``%Z`` does.
    """
    if not moment:
        return "-"
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    local = moment.astimezone(tz)
    shown = local.strftime(("%Y-%m-%d " if day else "") + ("%H:%M:%S" if seconds else "%H:%M"))
    return f"{shown} {local.tzname() or local.strftime('%z')}"


def zone_name(tz: tzinfo) -> str:
    """The zone's IANA name (``Europe/Berlin``) when it has one, else its current abbreviation."""
    return getattr(tz, "key", None) or datetime.now(tz).tzname() or "local time"
