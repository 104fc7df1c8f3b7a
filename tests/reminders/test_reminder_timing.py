"""When reminders fire: naive times in the user's zone, DST gaps and overlaps, RRULE steps."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from bot.reminders.timing import TimingError, first_occurrence, next_after, occurrences_between, parse_at, parse_rule

BERLIN = ZoneInfo("Europe/Berlin")
KATHMANDU = ZoneInfo("Asia/Kathmandu")


def test_a_naive_time_is_read_in_the_users_zone_even_at_a_45_minute_offset() -> None:
    at = parse_at("2026-12-01T09:00", KATHMANDU)
    assert at.astimezone(UTC) == datetime(2026, 12, 1, 3, 15, tzinfo=UTC)
    assert at.isoformat() == "2026-12-01T09:00:00+05:45"


def test_a_time_with_an_offset_keeps_its_instant() -> None:
    at = parse_at("2026-12-01T09:00:00Z", BERLIN)
    assert at.isoformat() == "2026-12-01T10:00:00+01:00"


def test_a_time_in_the_spring_gap_moves_forward_by_the_gap() -> None:
    # 2026-03-29 02:00 → 03:00 in Berlin: 02:30 does not exist.
    at = parse_at("2026-03-29T02:30", BERLIN)
    assert at.isoformat() == "2026-03-29T03:30:00+02:00"


def test_a_time_in_the_autumn_overlap_is_the_first_of_the_two() -> None:
    # 2026-10-25 03:00 → 02:00 in Berlin: 02:30 happens twice, first at +02:00.
    at = parse_at("2026-10-25T02:30", BERLIN)
    assert at.isoformat() == "2026-10-25T02:30:00+02:00"
    assert at.astimezone(UTC) == datetime(2026, 10, 25, 0, 30, tzinfo=UTC)


def test_a_daily_rule_keeps_its_wall_clock_time_across_the_dst_change() -> None:
    start = parse_at("2026-03-28T08:00", BERLIN)
    rule = parse_rule("FREQ=DAILY", start)
    second = next_after(rule, start, BERLIN)
    assert second is not None and second.isoformat() == "2026-03-29T08:00:00+02:00"
    assert (second.astimezone(UTC) - start.astimezone(UTC)).total_seconds() == 23 * 3600


def test_a_daily_rule_at_a_time_the_gap_skips_fires_shifted_forward_that_day() -> None:
    start = parse_at("2026-03-28T02:30", BERLIN)
    rule = parse_rule("FREQ=DAILY", start)
    gap_day = next_after(rule, start, BERLIN)
    assert gap_day is not None and gap_day.isoformat() == "2026-03-29T03:30:00+02:00"
    after = next_after(rule, gap_day, BERLIN)
    assert after is not None and after.isoformat() == "2026-03-30T02:30:00+02:00"


def test_a_daily_rule_fires_once_on_the_night_the_hour_repeats() -> None:
    start = parse_at("2026-10-24T02:30", BERLIN)
    rule = parse_rule("FREQ=DAILY", start)
    fired = [start]
    while len(fired) < 3:
        found = next_after(rule, fired[-1], BERLIN)
        assert found is not None
        fired.append(found)
    assert [f.isoformat() for f in fired] == [
        "2026-10-24T02:30:00+02:00",
        "2026-10-25T02:30:00+02:00",
        "2026-10-26T02:30:00+01:00",
    ]


def test_the_first_occurrence_is_the_first_the_rule_yields_at_or_after_at() -> None:
    # A Sunday at 23:59; "every Monday at 00:00" first fires one minute later, across midnight.
    at = parse_at("2026-11-29T23:59", BERLIN)
    rule = parse_rule("FREQ=WEEKLY;BYDAY=MO;BYHOUR=0;BYMINUTE=0;BYSECOND=0", at)
    assert first_occurrence(at, rule, BERLIN).isoformat() == "2026-11-30T00:00:00+01:00"


def test_missed_occurrences_are_counted() -> None:
    start = parse_at("2026-11-02T08:00", BERLIN)
    rule = parse_rule("FREQ=DAILY", start)
    assert occurrences_between(rule, start, parse_at("2026-11-05T09:00", BERLIN), BERLIN) == 3


@pytest.mark.parametrize(
    "rule",
    [
        "FREQ=SECONDLY",
        "FREQ=MINUTELY;BYSECOND=0,30",
        "FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0,1",
        "FREQ=FORTNIGHTLY",
        "nonsense",
        "",
        "FREQ=DAILY;COUNT=0",
        "DTSTART:20260101T000000\nRRULE:FREQ=DAILY",
    ],
)
def test_bad_or_too_frequent_rules_are_refused(rule: str) -> None:
    with pytest.raises(TimingError):
        parse_rule(rule, parse_at("2026-12-01T09:00", BERLIN))


def test_once_a_minute_is_allowed() -> None:
    start = parse_at("2026-12-01T09:00", BERLIN)
    rule = parse_rule("FREQ=MINUTELY", start)
    assert next_after(rule, start, BERLIN) == parse_at("2026-12-01T09:01", BERLIN)


@pytest.mark.parametrize("text", ["tomorrow at 9", "2026-13-01T09:00", "", "09:00"])
def test_unparseable_times_are_refused(text: str) -> None:
    with pytest.raises(TimingError, match="ISO 8601"):
        parse_at(text, BERLIN)
