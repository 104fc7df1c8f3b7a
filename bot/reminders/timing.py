"""When a reminder fires: reading ``at`` in the user's zone and stepping an RFC 5545 RRULE.

Wall-clock times that do not exist (the hour skipped in spring) move forward by the gap; times
that happen twice (the hour repeated in autumn) mean the first of them, which is what a person
who says "at 2:30" on those nights expects. Both come from reading a naive time with ``fold=0``.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, tzinfo

from dateutil.rrule import SECONDLY, rrule, rrulestr

__all__ = ["TimingError", "first_occurrence", "next_after", "occurrences_between", "parse_at", "parse_rule", "resolve"]

MIN_INTERVAL = timedelta(minutes=1)
# A scheduled task (run_model) costs a model call each time: it may repeat at most this often.
MODEL_RUN_EVERY = timedelta(hours=1)
PAST_GRACE = timedelta(seconds=60)


class TimingError(ValueError):
    """``at`` or ``repeat`` cannot be used; the message says why in words the model can act on."""


def resolve(local: datetime, tz: tzinfo) -> datetime:
    """A wall-clock time in ``tz`` as a real instant (gap → shifted forward; overlap → the first)."""
    naive = local.replace(tzinfo=None, fold=0)
    return naive.replace(tzinfo=tz).astimezone(UTC).astimezone(tz)


def parse_at(text: str, tz: tzinfo) -> datetime:
    """``at`` (ISO 8601) as an aware time in ``tz``; a time without an offset is read in ``tz``."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise TimingError(f"'at' must be an ISO 8601 date-time such as 2026-03-29T09:00 (got {text!r}).") from None
    if moment.tzinfo is None:
        return resolve(moment, tz)
    return moment.astimezone(tz)


def parse_rule(text: str, start: datetime, *, every: timedelta = MIN_INTERVAL, what: str = "'repeat'") -> rrule:
    """The RRULE ``text`` starting at ``start``; refused if invalid, empty or more often than ``every``
    (once a minute; ``what`` names the repeating thing in the refusal)."""
    body = text.strip().removeprefix("RRULE:")
    if not body or any(c in body for c in "\r\n") or "DTSTART" in body.upper():
        raise TimingError("'repeat' must be one RRULE such as FREQ=WEEKLY;BYDAY=MO (no DTSTART; 'at' is the start).")
    try:
        rule = rrulestr(body, dtstart=start.replace(tzinfo=None))
    except (ValueError, TypeError) as exc:
        raise TimingError(f"'repeat' is not a valid RRULE ({exc}).") from None
    if not isinstance(rule, rrule):
        raise TimingError("'repeat' must be a single RRULE.")
    too_often = f"{what} may not be more frequent than once {_every(every)}."
    if rule._freq == SECONDLY:  # dateutil keeps the frequency only here
        raise TimingError(too_often)
    first = list(_take(rule, 100 if every > MIN_INTERVAL else 10))
    if not first:
        raise TimingError("'repeat' never occurs at or after 'at'.")
    if any(b - a < every for a, b in zip(first, first[1:], strict=False)):
        raise TimingError(too_often)
    return rule


def check_repeat(text: str, *, run_model: bool) -> None:
    """Refuse (``TimingError``) a repeat rule that is invalid or too frequent: more often than once a
    minute, or for a scheduled task (``run_model``, a model call each time) more often than hourly."""
    every, what = (MODEL_RUN_EVERY, "A scheduled task (run_model)") if run_model else (MIN_INTERVAL, "'repeat'")
    parse_rule(text, datetime(2026, 1, 5, 9, 0), every=every, what=what)


def _every(span: timedelta) -> str:
    minutes = int(span.total_seconds() // 60)
    return {1: "a minute", 60: "an hour"}.get(minutes, f"every {minutes} minutes")


def first_occurrence(at: datetime, rule: rrule | None, tz: tzinfo) -> datetime:
    """The first instant the reminder fires: ``at`` itself, or the rule's first occurrence at or after it."""
    if rule is None:
        return at
    found = rule.after(at.replace(tzinfo=None), inc=True)
    assert found is not None  # parse_rule refused rules that never occur
    return resolve(found, tz)


def next_after(rule: rrule, after: datetime, tz: tzinfo) -> datetime | None:
    """The rule's first occurrence strictly after the instant ``after``; None when it has ended.

    Instants are compared in UTC: aware times sharing one zone compare by wall clock, which is
    wrong in the repeated hour.
    """
    wall = after.astimezone(tz).replace(tzinfo=None)
    found = rule.after(wall, inc=False)
    # A repeated hour can map a later wall-clock time back to an earlier instant.
    while found is not None and resolve(found, tz).astimezone(UTC) <= after.astimezone(UTC):
        found = rule.after(found, inc=False)
    return None if found is None else resolve(found, tz)


def occurrences_between(rule: rrule, start: datetime, end: datetime, tz: tzinfo) -> int:
    """How many occurrences fall in the instants (``start``, ``end``]."""
    count, cursor = 0, start
    while (found := next_after(rule, cursor, tz)) is not None and found.astimezone(UTC) <= end.astimezone(UTC):
        count, cursor = count + 1, found
        if count >= 10_000:  # a month of minutes; the exact figure no longer matters to the user
            break
    return count


def _take(rule: rrule, n: int) -> list[datetime]:
    out = []
    for moment in rule:
        out.append(moment)
        if len(out) == n:
            break
    return out
