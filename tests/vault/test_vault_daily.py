"""The daily note: which file a line goes to, what the line says, and the errors for bad input."""

from __future__ import annotations

import datetime as dt

import pytest

from vault import InvalidNote, Vault, daily_entry


def test_the_pattern_names_the_days_note_and_its_lines_are_tagged_daily(notes: Vault) -> None:
    when = dt.datetime(2026, 1, 5, 12, 7, tzinfo=dt.UTC)

    result = notes.daily_note("hello \n there", folder="Journal", pattern="%d.%m.%Y", when=when)

    assert (result.path, result.created) == ("Journal/05.01.2026.md", True)
    note = notes.read(result.path)
    assert note.title == "05.01.2026"
    assert note.content.strip() == "- 12:07 hello there"
    # The tag is how Obsidian's tag pane and a `#daily` search find the days.
    assert (note.frontmatter["tags"], note.frontmatter["source"]) == (["daily"], "daily")


def test_a_line_without_a_time_goes_to_todays_note_on_the_machines_clock(notes: Vault) -> None:
    # The date is read before and after: a run across midnight may land on either day.
    before = dt.datetime.now().astimezone()
    result = notes.daily_note("no time given")
    after = dt.datetime.now().astimezone()

    assert result.path in {f"Daily/{day:%Y-%m-%d}.md" for day in (before, after)}
    title, line = daily_entry("no time given")
    assert title in {f"{day:%Y-%m-%d}" for day in (before, after)}
    assert line.endswith(" no time given")


def test_a_time_without_a_zone_is_taken_as_the_machines_local_time() -> None:
    late = dt.datetime(2026, 3, 1, 23, 30)

    assert daily_entry("late", when=late) == ("2026-03-01", "- 23:30 late")


def test_a_time_with_a_zone_is_dated_in_that_zone() -> None:
    auckland = dt.timezone(dt.timedelta(hours=13))
    when = dt.datetime(2026, 3, 1, 23, 30, tzinfo=dt.UTC).astimezone(auckland)

    assert daily_entry("breakfast", when=when) == ("2026-03-02", "- 12:30 breakfast")


@pytest.mark.parametrize(
    ("text", "pattern", "says"),
    [
        ("  \n ", "%Y-%m-%d", r"(?i)daily note entry needs some text"),
        ("x", "", r"The daily note pattern '' gives an empty title"),
        ("x", "%Y\ud800", r"The daily note pattern '%Y\\ud800' is not a date format"),
    ],
)
def test_bad_daily_input_is_refused_saying_what_is_wrong_and_writes_nothing(
    notes: Vault, text: str, pattern: str, says: str
) -> None:
    with pytest.raises(InvalidNote, match=says):
        notes.daily_note(text, pattern=pattern, when=dt.datetime(2026, 1, 5, tzinfo=dt.UTC))

    assert list(notes.root.rglob("*.md")) == []
