"""Listing folders and searching notes."""

from __future__ import annotations

import pytest

from vault import InvalidNote, NoteNotFound, Vault


def note_with_updated(notes: Vault, folder: str, name: str, updated: str, body: str = "text") -> None:
    path = notes.root / folder / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\ntitle: {name}\nupdated: '{updated}'\n---\n{body}\n", encoding="utf-8")


def test_list_newest_first_with_limit(notes: Vault) -> None:
    note_with_updated(notes, "", "Old", "2024-01-01T00:00:00Z")
    note_with_updated(notes, "", "New", "2026-01-01T00:00:00Z")
    note_with_updated(notes, "", "Middle", "2025-01-01T00:00:00Z")

    listing = notes.list("", limit=2)

    assert [n.path for n in listing.notes] == ["New.md", "Middle.md"]
    assert listing.notes[0].updated == "2026-01-01T00:00:00Z"
    assert len(notes.list(limit=None).notes) == 3


def test_list_uses_mtime_without_front_matter(notes: Vault) -> None:
    (notes.root / "Hand.md").write_text("x", encoding="utf-8")

    summary = notes.list().notes[0]
    assert (summary.path, summary.title, summary.tags) == ("Hand.md", "Hand", [])
    assert summary.updated.endswith("Z")


def test_list_shows_folders_hides_dot_folders_and_other_files(notes: Vault) -> None:
    notes.write("Projects/Deep", "A", "a")
    notes.write("Inbox", "B", "b")
    (notes.root / ".obsidian").mkdir()
    (notes.root / "picture.png").write_bytes(b"\x89PNG")
    (notes.root / ".hidden.md").write_text("x", encoding="utf-8")
    notes.write("", "Top", "t")

    listing = notes.list("")
    assert listing.folders == ["Inbox", "Projects"]
    assert [n.path for n in listing.notes] == ["Top.md"]
    assert notes.list("Projects").folders == ["Projects/Deep"]
    assert [n.path for n in notes.list("Projects/Deep").notes] == ["Projects/Deep/A.md"]


def test_list_missing_folder(notes: Vault) -> None:
    with pytest.raises(NoteNotFound):
        notes.list("Nope")


def test_search_ranks_title_over_tags_over_body(notes: Vault) -> None:
    notes.write("", "Garden plan", "Roses and tulips.")
    notes.write("", "Weekend", "Nothing about it.", tags=["garden"])
    notes.write("", "Chores", "Water the garden on Sunday.")
    notes.write("", "Unrelated", "Cooking pasta.")

    hits = notes.search("GARDEN")

    assert [h.path for h in hits] == ["Garden plan.md", "Weekend.md", "Chores.md"]
    assert hits[0].title == "Garden plan"
    assert notes.search("garden", limit=1)[0].path == "Garden plan.md"


def test_search_needs_every_word(notes: Vault) -> None:
    notes.write("", "Trip", "Train to Lisbon in May.")
    notes.write("", "Other", "Train to Porto.")

    assert [h.path for h in notes.search("train lisbon")] == ["Trip.md"]


def test_search_snippet_around_first_match(notes: Vault) -> None:
    body = "filler " * 60 + "the   secret\n\nword is here " + "tail " * 60
    notes.write("", "Long", body)

    snippet = notes.search("secret")[0].snippet
    assert "the secret word is here" in snippet
    assert snippet.startswith("…") and snippet.endswith("…")
    assert len(snippet) <= 162


def test_search_snippet_falls_back_to_body_start(notes: Vault) -> None:
    notes.write("", "Lisbon", "A short body.")

    assert notes.search("lisbon")[0].snippet == "A short body."


def test_search_skips_dot_folders(notes: Vault) -> None:
    notes.write("", "Plan", "old plan")
    notes.read("Plan")
    notes.write("", "Plan", "new plan", mode="replace")

    assert [h.path for h in notes.search("plan")] == ["Plan.md"]


def test_empty_query_is_invalid(notes: Vault) -> None:
    with pytest.raises(InvalidNote):
        notes.search("   ")
