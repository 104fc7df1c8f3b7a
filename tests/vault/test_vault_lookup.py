"""Finding notes the way the model asks for them (a title, a file name, a folder) and the errors it is told."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from vault import InvalidNote, NoteNotFound, Vault


def test_a_note_is_read_by_its_file_name_when_its_title_differs(notes: Vault) -> None:
    (notes.root / "People").mkdir()
    (notes.root / "People" / "x1.md").write_text("---\ntitle: Ann\n---\nfriend from school\n", encoding="utf-8")

    assert notes.read("x1").path == "People/x1.md"
    assert notes.read("Elsewhere/X1").path == "People/x1.md"


def test_a_title_is_never_matched_by_its_first_letters(notes: Vault) -> None:
    notes.write("", "Teamwork", "how we work")

    with pytest.raises(NoteNotFound):
        notes.read("Tea")


def test_a_note_is_read_by_the_folder_and_title_it_was_written_with(notes: Vault) -> None:
    written = notes.write("Projects/2026", "Q3: plan?", "ship it")

    # The title is not a portable file name; the path the model wrote to still finds the note.
    assert written.path == "Projects/2026/Q3 plan.md"
    assert notes.read("Projects/2026/Q3: plan?").path == written.path


def test_search_in_the_whole_vault_by_naming_its_root(notes: Vault) -> None:
    notes.write("", "Top", "garden")
    notes.write("Deep/Down", "Low", "garden")

    assert sorted(hit.path for hit in notes.search("garden", folder=".")) == ["Deep/Down/Low.md", "Top.md"]


@pytest.mark.parametrize(
    ("ask", "error", "says"),
    [
        (lambda notes: notes.read("  "), InvalidNote, "Give the path or title of the note"),
        (lambda notes: notes.list(limit=-1), InvalidNote, "limit cannot be negative"),
        (lambda notes: notes.list("Nope"), NoteNotFound, "No folder 'Nope'"),
        (lambda notes: notes.search("  "), InvalidNote, "Give some words to search for"),
        (lambda notes: notes.search("garden", limit=0), InvalidNote, "limit must be at least 1"),
    ],
)
def test_a_bad_request_says_what_is_wrong(
    notes: Vault, ask: Callable[[Vault], object], error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=f"(?i){says}"):
        ask(notes)


def test_a_note_saved_under_a_second_name_is_found_there_at_once(tmp_path: Path) -> None:
    with Vault(tmp_path / "v", max_staleness=3600) as notes:
        notes.write("", "Idea", "a zeppelin")
        second = notes.write("", "Idea", "a submarine")

        assert second.path == "Idea 2.md"
        assert [hit.path for hit in notes.search("submarine")] == ["Idea 2.md"]
        assert [hit.path for hit in notes.search("zeppelin")] == ["Idea.md"]


@pytest.mark.parametrize(
    ("title", "content", "mode", "says"),
    [
        ("  ", "text", "create", "needs a non-empty title"),
        ("Plan", "a\x00b", "create", "cannot contain NUL bytes"),
        ("Plan", "text", "overwrite", "Unknown write mode 'overwrite'"),
    ],
)
def test_a_bad_write_says_what_is_wrong(notes: Vault, title: str, content: str, mode: str, says: str) -> None:
    with pytest.raises(InvalidNote, match=f"(?i){says}"):
        notes.write("", title, content, mode=mode)


@pytest.mark.parametrize(("folder", "where"), [("", "'/'"), ("Inbox", "'Inbox'")])
def test_replacing_a_missing_note_says_which_folder_was_looked_in(notes: Vault, folder: str, where: str) -> None:
    (notes.root / "Inbox").mkdir()

    with pytest.raises(NoteNotFound, match=f"No note titled 'Plan' in {where} to replace"):
        notes.write(folder, "Plan", "text", mode="replace")


def test_a_folder_that_is_a_link_to_a_file_is_refused_naming_both(notes: Vault) -> None:
    (notes.root / "notes.txt").write_text("a file", encoding="utf-8")
    (notes.root / "Inbox").symlink_to(notes.root / "notes.txt")

    with pytest.raises(InvalidNote, match="'Inbox/Sub' goes through the file 'Inbox', not a folder"):
        notes.write("Inbox/Sub", "Plan", "text")
    assert (notes.root / "notes.txt").read_text(encoding="utf-8") == "a file"
