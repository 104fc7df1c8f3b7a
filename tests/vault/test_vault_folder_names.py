"""A create knows which names its folder holds without listing it every time: changes made outside
vaultbot (Obsidian, a sync, a second vaultbot) are still seen, so a new note never clashes in case
with an existing one and a freed name can be used again."""

from __future__ import annotations

import pytest

from tests.vault.test_vault_write import a_file_appears_after_the_name_is_chosen
from vault import Vault


def names(notes: Vault, folder: str) -> list[str]:
    return sorted(p.name for p in (notes.root / folder).iterdir())


def test_a_note_created_outside_vaultbot_is_seen_by_the_next_create(notes: Vault) -> None:
    notes.write("Inbox", "First", "one")  # vaultbot has read the folder's names
    (notes.root / "Inbox" / "milk.md").write_text("typed in Obsidian")

    result = notes.write("Inbox", "Milk", "oat")

    assert result.path == "Inbox/Milk 2.md"
    assert names(notes, "Inbox") == ["First.md", "Milk 2.md", "milk.md"]


def test_a_note_deleted_outside_vaultbot_frees_its_name(notes: Vault) -> None:
    notes.write("Inbox", "Milk", "oat")
    (notes.root / "Inbox" / "Milk.md").unlink()

    assert notes.write("Inbox", "Milk", "rice").path == "Inbox/Milk.md"
    assert names(notes, "Inbox") == ["Milk.md"]


def test_two_vaults_on_one_folder_never_take_the_same_name(notes: Vault) -> None:
    with Vault(notes.root, max_staleness=0) as other:
        paths = [(notes if i % 2 else other).write("Inbox", "Same", f"body {i}").path for i in range(6)]

    assert paths == ["Inbox/Same.md", *(f"Inbox/Same {n}.md" for n in range(2, 7))]
    assert len(names(notes, "Inbox")) == 6


def test_a_note_that_appears_mid_write_counts_for_later_creates(notes: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    a_file_appears_after_the_name_is_chosen(monkeypatch, "Milk.md", b"typed in Obsidian meanwhile")
    assert notes.write("Inbox", "Milk", "oat").path == "Inbox/Milk 2.md"

    # "MILK.md" would be a second Milk.md on macOS and Windows.
    assert notes.write("Inbox", "MILK", "rice").path == "Inbox/MILK 3.md"
    assert names(notes, "Inbox") == ["MILK 3.md", "Milk 2.md", "Milk.md"]
