"""Appending to and replacing notes: what is added is kept as written, and every replaced text stays
recoverable under .vaultbot/versions."""

from __future__ import annotations

import datetime as dt
import types
from pathlib import Path

import pytest

import vault.vault
from vault import NoteChanged, Vault


def versions_of(notes: Vault, note: str) -> list[Path]:
    """The saved versions of ``note`` (a vault-relative path without ``.md``), by name."""
    return sorted((notes.root / ".vaultbot" / "versions" / note).rglob("*.md"))


@pytest.fixture
def a_clock_that_does_not_move(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every replace happens at the same instant, as several do within one tick of a coarse clock
    (Windows' ticks every 15 ms)."""
    instant = dt.datetime(2026, 11, 23, 9, 0, tzinfo=dt.UTC)

    class Frozen(dt.datetime):
        @classmethod
        def now(cls, tz: dt.tzinfo | None = None) -> dt.datetime:  # type: ignore[override]
            return instant.astimezone(tz)

    monkeypatch.setattr(vault.vault, "dt", types.SimpleNamespace(datetime=Frozen, UTC=dt.UTC))


def test_appended_text_keeps_its_own_leading_spaces_and_letters(notes: Vault) -> None:
    notes.write("", "Packing", "- bag")

    notes.write("", "Packing", "    - socks\n", mode="append")
    notes.write("", "Packing", "X-ray results\n\n", mode="append")

    # An indented line is a nested list item or code in Markdown: stripping it would change the note.
    assert notes.read("Packing").content.strip("\n") == "- bag\n\n    - socks\n\nX-ray results"


def test_a_replace_gives_the_note_the_tags_it_is_given(notes: Vault) -> None:
    notes.write("", "Plan", "old plan", tags=["draft"])

    notes.write("", "Plan", "new plan", tags=["final"], mode="replace")

    assert notes.read("Plan").frontmatter["tags"] == ["final"]


def test_a_note_that_is_not_utf8_can_be_replaced_and_its_bytes_are_kept(notes: Vault) -> None:
    old = b"caf\xe9 list, saved by an old Windows editor\n"
    (notes.root / "Latin1.md").write_bytes(old)

    result = notes.write("", "Latin1", "café list", mode="replace")

    assert notes.read("Latin1").content.strip() == "café list"
    assert result.previous_version is not None
    assert (notes.root / result.previous_version).read_bytes() == old


@pytest.mark.usefixtures("a_clock_that_does_not_move")
def test_replaces_at_the_same_instant_each_keep_their_own_version(notes: Vault) -> None:
    notes.write("Ideas", "Plan", "text 0")
    kept = []
    for n in range(1, 4):
        kept.append(notes.write("Ideas", "Plan", f"text {n}", mode="replace").previous_version)

    assert len(set(kept)) == 3 and None not in kept
    texts = [(notes.root / str(path)).read_text(encoding="utf-8") for path in kept]
    assert all(f"text {n}" in text for n, text in enumerate(texts))
    assert len(versions_of(notes, "Ideas/Plan")) == 3


def test_versions_sort_oldest_first_by_name(notes: Vault) -> None:
    notes.write("", "Plan", "first")
    notes.write("", "Plan", "second", mode="replace")
    notes.write("", "Plan", "third", mode="replace")

    texts = [path.read_text(encoding="utf-8") for path in versions_of(notes, "Plan")]

    assert len(texts) == 2 and "first" in texts[0] and "second" in texts[1]


def test_an_append_that_creates_the_note_gives_it_its_title(notes: Vault) -> None:
    result = notes.write("Inbox", "Q3: plan?", "first idea", mode="append")

    assert (result.path, result.created) == ("Inbox/Q3 plan.md", True)
    note = notes.read(result.path)
    assert (note.title, note.frontmatter["title"]) == ("Q3: plan?", "Q3: plan?")


@pytest.mark.parametrize("mode", ["append", "replace"])
def test_a_change_refreshes_updated_and_records_what_it_is_given(notes: Vault, mode: str) -> None:
    (notes.root / "Old.md").write_text(
        "---\nupdated: '2024-01-01T00:00:00Z'\nconfidence: 10\nsource: email\n---\nold text\n", encoding="utf-8"
    )
    (notes.root / "Newer.md").write_text("---\nupdated: '2025-01-01T00:00:00Z'\n---\nwritten later\n", encoding="utf-8")

    notes.write("", "Old", "new text", mode=mode, confidence=70, source="telegram")

    changed = notes.read("Old").frontmatter
    assert (changed["confidence"], changed["source"]) == (70, "telegram")
    assert changed["updated"] > "2025-01-01T00:00:00Z"
    # The listing is newest first: the changed note is at the top again.
    assert notes.list().notes[0].path == "Old.md"
    # What is not given is kept.
    notes.write("", "Old", "newer text", mode=mode)
    kept = notes.read("Old").frontmatter
    assert (kept["confidence"], kept["source"]) == (70, "telegram")


def test_an_outside_edit_after_the_bots_own_replace_is_not_overwritten(notes: Vault) -> None:
    notes.write("", "Plan", "first")
    notes.write("", "Plan", "second", mode="replace")
    path = notes.root / "Plan.md"
    path.write_text(path.read_text(encoding="utf-8") + "typed in Obsidian\n", encoding="utf-8")

    with pytest.raises(NoteChanged):
        notes.write("", "Plan", "third", mode="replace")
    assert "typed in Obsidian" in path.read_text(encoding="utf-8")


def test_a_hand_written_note_edited_after_it_was_read_is_not_replaced(notes: Vault) -> None:
    path = notes.root / "Hand.md"
    path.write_text("by hand\n", encoding="utf-8")
    notes.read("Hand")
    path.write_text("by hand, and more typed in Obsidian\n", encoding="utf-8")

    with pytest.raises(NoteChanged):
        notes.write("", "Hand", "by bot", mode="replace")
    assert path.read_text(encoding="utf-8") == "by hand, and more typed in Obsidian\n"
