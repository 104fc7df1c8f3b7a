"""The vault takes a recorded change back exactly, leaves what changed since, and never leaves the vault."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vault import Change, Vault


@pytest.fixture
def notes(tmp_path: Path) -> Vault:
    with Vault(tmp_path / "vault") as opened:
        yield opened


def files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but vaultbot's own bookkeeping, by relative path."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.relative_to(root).as_posix().startswith(".vaultbot/")
    }


def test_a_created_note_goes_to_the_trash_and_comes_back(notes: Vault) -> None:
    written = notes.write("Inbox", "Buy milk", "oat milk, two cartons")
    assert written.change is not None and written.change.kind == "created"
    text = (notes.root / "Inbox/Buy milk.md").read_bytes()

    undone = notes.take_back(written.change)

    assert undone.status == "undone"
    assert not (notes.root / "Inbox/Buy milk.md").exists()
    assert (notes.root / ".trash/Inbox/Buy milk.md").read_bytes() == text
    assert undone.change == Change(
        "trashed", "Inbox/Buy milk.md", written.change.after, None, ".trash/Inbox/Buy milk.md", undone.change.detail
    )
    notes.sync()
    assert notes.search("cartons") == []  # the index forgot it

    redone = notes.take_back(undone.change)
    assert redone.status == "undone" and redone.change is not None and redone.change.kind == "restored"
    assert (notes.root / "Inbox/Buy milk.md").read_bytes() == text
    assert not (notes.root / ".trash/Inbox/Buy milk.md").exists()


def test_an_append_is_taken_out_to_the_byte_even_from_a_note_written_by_hand(notes: Vault) -> None:
    # A person's note: CRLF endings, a comment in the front matter, trailing blank lines.
    by_hand = b"---\r\ntitle: Groceries  # keep\r\ntags: [food]\r\n---\r\n\r\n- eggs\r\n- flour\r\n\r\n\r\n"
    (notes.root / "Lists").mkdir()
    (notes.root / "Lists/Groceries.md").write_bytes(by_hand)

    written = notes.write("Lists", "Groceries", "- oat milk", mode="append", tags=["weekly"])
    assert written.change is not None and written.change.kind == "appended"
    assert b"oat milk" in (notes.root / "Lists/Groceries.md").read_bytes()

    undone = notes.take_back(written.change)

    assert undone.status == "undone"
    assert (notes.root / "Lists/Groceries.md").read_bytes() == by_hand
    assert undone.change is not None and undone.change.kind == "reverted"
    # What was taken out is kept, and putting it back gives the appended note again.
    redone = notes.take_back(undone.change)
    assert redone.status == "undone"
    assert b"- oat milk" in (notes.root / "Lists/Groceries.md").read_bytes()


def test_a_replaced_note_gets_its_previous_text_back(notes: Vault) -> None:
    notes.write("Projects", "Shed", "Build it in spring.")
    before = (notes.root / "Projects/Shed.md").read_bytes()
    notes.read("Projects/Shed")
    written = notes.write("Projects", "Shed", "Build it in autumn instead.", mode="replace")
    assert written.change is not None and written.change.kind == "replaced"
    assert written.change.detail["diff"][-2:] == ["-Build it in spring.", "+Build it in autumn instead."]

    undone = notes.take_back(written.change)

    assert undone.status == "undone"
    assert (notes.root / "Projects/Shed.md").read_bytes() == before


def test_a_note_edited_since_is_left_and_the_edit_named(notes: Vault) -> None:
    written = notes.write("Inbox", "Call mum", "Sunday afternoon")
    path = notes.root / "Inbox/Call mum.md"
    edited = path.read_text() + "Ask about the garden.\n"
    path.write_text(edited)

    outcome = notes.take_back(written.change)  # type: ignore[arg-type]

    assert outcome.status == "left"
    assert outcome.reason == "it was edited since (1 line added, 0 removed: “Ask about the garden.”)"
    assert path.read_text() == edited
    assert not (notes.root / ".trash").exists()


def test_an_append_edited_since_is_left(notes: Vault) -> None:
    notes.write("Daily", "2026-11-25", "- 09:00 coffee")
    written = notes.write("Daily", "2026-11-25", "- 10:00 standup", mode="append")
    path = notes.root / "Daily/2026-11-25.md"
    edited = path.read_text().replace("coffee", "tea")
    path.write_text(edited)

    outcome = notes.take_back(written.change)  # type: ignore[arg-type]

    assert (outcome.status, outcome.reason) == ("left", "it was edited since (above the added text)")
    assert path.read_text() == edited


def test_a_note_deleted_since_loses_nothing(notes: Vault) -> None:
    created = notes.write("Inbox", "Gone", "short-lived").change
    notes.write("Inbox", "Kept", "first")
    notes.read("Inbox/Kept")
    replaced = notes.write("Inbox", "Kept", "second", mode="replace").change
    (notes.root / "Inbox/Gone.md").unlink()
    (notes.root / "Inbox/Kept.md").unlink()

    assert notes.take_back(created).status == "already"  # type: ignore[arg-type]
    left = notes.take_back(replaced)  # type: ignore[arg-type]

    assert left.status == "left"
    assert left.reason is not None and left.reason.startswith(
        "it was deleted or moved since; its earlier text is kept in"
    )
    assert not (notes.root / "Inbox/Kept.md").exists()  # not brought back over the person's deletion
    assert files(notes.root) == {}


def test_taking_back_twice_finds_what_the_first_time_did(notes: Vault) -> None:
    created = notes.write("Inbox", "Twice", "once").change
    first = notes.take_back(created)  # type: ignore[arg-type]
    again = notes.take_back(created)  # type: ignore[arg-type]
    assert (again.status, again.change) == ("undone", first.change)
    assert sorted(files(notes.root)) == [".trash/Inbox/Twice.md"]


def test_a_move_cut_short_between_link_and_unlink_is_finished(notes: Vault) -> None:
    created = notes.write("Inbox", "Half", "moved halfway").change
    (notes.root / ".trash/Inbox").mkdir(parents=True)
    os.link(notes.root / "Inbox/Half.md", notes.root / ".trash/Inbox/Half.md")

    outcome = notes.take_back(created)  # type: ignore[arg-type]

    assert outcome.status == "undone"
    assert sorted(files(notes.root)) == [".trash/Inbox/Half.md"]


def test_a_name_taken_in_the_trash_gets_a_number_and_nothing_there_is_replaced(notes: Vault) -> None:
    (notes.root / ".trash/Inbox").mkdir(parents=True)
    (notes.root / ".trash/Inbox/Plan.md").write_text("an older plan, trashed by hand")
    created = notes.write("Inbox", "Plan", "the new plan").change

    notes.take_back(created)  # type: ignore[arg-type]

    assert (notes.root / ".trash/Inbox/Plan.md").read_text() == "an older plan, trashed by hand"
    assert "the new plan" in (notes.root / ".trash/Inbox/Plan 2.md").read_text()


@pytest.mark.parametrize("title", ["Ünïcode — “quoted” 日本語", "spaces   and  tabs", "a.b.c", "emoji 🍮 pudding"])
def test_odd_names_go_to_the_trash_and_back(notes: Vault, title: str) -> None:
    written = notes.write("Odd folder ü", title, "odd")
    undone = notes.take_back(written.change)  # type: ignore[arg-type]
    assert undone.status == "undone"
    assert notes.take_back(undone.change).status == "undone"  # type: ignore[arg-type]
    assert (notes.root / written.path).is_file()


def test_a_folder_now_linked_outside_the_vault_is_left_untouched(notes: Vault, tmp_path: Path) -> None:
    written = notes.write("Inbox", "Secret", "inside")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "Secret.md").write_bytes((notes.root / "Inbox/Secret.md").read_bytes())
    (notes.root / "Inbox/Secret.md").unlink()
    (notes.root / "Inbox").rmdir()
    (notes.root / "Inbox").symlink_to(outside)

    outcome = notes.take_back(written.change)  # type: ignore[arg-type]

    assert outcome.status == "left" and "cannot be reached safely" in (outcome.reason or "")
    assert (outside / "Secret.md").exists()
    assert not (notes.root / ".trash").exists()


def test_a_note_replaced_by_a_link_is_left(notes: Vault, tmp_path: Path) -> None:
    written = notes.write("Inbox", "Linked", "mine")
    target = tmp_path / "elsewhere.md"
    target.write_bytes((notes.root / "Inbox/Linked.md").read_bytes())
    (notes.root / "Inbox/Linked.md").unlink()
    (notes.root / "Inbox/Linked.md").symlink_to(target)

    outcome = notes.take_back(written.change)  # type: ignore[arg-type]

    assert (outcome.status, outcome.reason) == ("left", "it is a link now")
    assert target.exists() and (notes.root / "Inbox/Linked.md").is_symlink()


def test_a_trash_that_is_a_link_out_is_never_written_through(notes: Vault, tmp_path: Path) -> None:
    written = notes.write("Inbox", "Note", "stays")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (notes.root / ".trash").symlink_to(outside)

    outcome = notes.take_back(written.change)  # type: ignore[arg-type]

    assert outcome.status == "left" and ".trash" in (outcome.reason or "")
    assert list(outside.iterdir()) == []
    assert (notes.root / "Inbox/Note.md").exists()


@pytest.mark.parametrize(
    "kept", ["../../outside.md", ".trash/../../outside.md", "/etc/passwd", ".trash/\x00x.md", "Inbox/Note.md"]
)
def test_a_hostile_place_in_the_trash_is_refused(notes: Vault, tmp_path: Path, kept: str) -> None:
    (tmp_path / "outside.md").write_text("not the vault's")
    change = Change("trashed", "Inbox/Back.md", "0" * 64, None, kept)

    outcome = notes.take_back(change)

    assert outcome.status == "left"
    assert (tmp_path / "outside.md").read_text() == "not the vault's"
    assert not (notes.root / "Inbox/Back.md").exists()


@pytest.mark.parametrize("path", ["../outside.md", "/etc/hostname", ".obsidian/app.json", "a/\x00/b.md", ""])
def test_a_hostile_path_in_a_change_is_refused(notes: Vault, tmp_path: Path, path: str) -> None:
    (tmp_path / "outside.md").write_text("not the vault's")
    outcome = notes.take_back(Change("created", path, None, None))
    assert outcome.status == "left"
    assert (tmp_path / "outside.md").read_text() == "not the vault's"
