"""Folders a write creates get names Windows, macOS and Linux all accept; existing folders are used as they are."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from vault import InvalidNote, PathNotAllowed, Vault, VaultError

# Windows' rules for a file or folder name (learn.microsoft.com, "Naming Files, Paths, and
# Namespaces"), written out here rather than taken from the vault so the test checks the vault.
_WINDOWS_FORBIDDEN = re.compile(r'[<>:"/\\|?*\x00-\x1f]')
_WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL"} | {f"{p}{n}" for p in ("COM", "LPT") for n in "0123456789¹²³"}

FOLDERS = st.lists(
    st.one_of(
        st.text(max_size=20),
        st.sampled_from(["CON", "nul.txt", "Com1", "a.", "b ", " . ", "..", "<>", "?*", "#tag", "[[x]]", "🚀"]),
    ),
    min_size=1,
    max_size=4,
).map("/".join)


def portable(name: str) -> bool:
    """Whether a folder called ``name`` can exist on Windows (and so in OneDrive or a synced
    Windows Obsidian) as well as on macOS and Linux, and be linked to from Obsidian."""
    return (
        bool(name)
        and not _WINDOWS_FORBIDDEN.search(name)
        and not re.search(r"[#^\[\]]", name)
        and not name.endswith((" ", "."))
        and not name.startswith(".")
        and name.split(".")[0].strip().upper() not in _WINDOWS_RESERVED
        and len(name.encode("utf-8")) <= 255
    )


def folders_under(root: Path) -> list[Path]:
    """Every folder in the vault, its private .vaultbot folder aside."""
    return [p for p in root.rglob("*") if p.is_dir() and p.relative_to(root).parts[0] != ".vaultbot"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(FOLDERS)
@example("!@#$%^&*()`~")
@example("><script>alert(1)</script>")
@example("CON")
@example("lpt1.backup/aux")
@example("a./b ")
@example("..")
@example("Notes/\x00/x")
@example("Ta\x01b\x1f")
@example("x" * 300)
@example("é" * 127 + "ab")
@example("📝 Notes/🚀 Rockets")
@example("Projects/Q3: plan?/draft*")
def test_every_folder_a_write_creates_is_portable(folder: str) -> None:
    with tempfile.TemporaryDirectory() as tmp, Vault(Path(tmp) / "vault", max_staleness=0) as notes:
        try:
            result = notes.write(folder, "Title", "content")
        except VaultError:
            assert folders_under(notes.root) == []  # refused: nothing was created
            return
        created = folders_under(notes.root)
        assert all(portable(p.name) for p in created), [p.name for p in created]
        assert all(p.resolve().is_relative_to(notes.root) for p in created)
        # The result says where the note really went.
        note = notes.root / result.path
        assert note.is_file() and note.resolve().is_relative_to(notes.root)
        assert note.parent in [notes.root, *created]
        assert notes.read(result.path).content.strip() == "content"


def test_hostile_folder_names_are_made_portable(notes: Vault) -> None:
    assert notes.write("!@#$%^&*()`~", "T", "x").path == "!@ $% & ()`~/T.md"
    assert notes.write("><script>alert(1)</script>", "T", "x").path == "script alert(1)/script/T.md"
    assert notes.write("CON/com1.d", "T", "x").path == "CON_/com1_.d/T.md"
    assert notes.write("a./b ", "T", "x").path == "a/b/T.md"
    assert notes.write("Q3: plan?", "T", "x").path == "Q3 plan/T.md"


def test_the_same_hostile_folder_is_the_same_folder_next_time(notes: Vault) -> None:
    first = notes.write("Ideas: later?", "One", "x")
    second = notes.write("Ideas: later?", "Two", "y")

    assert Path(first.path).parent == Path(second.path).parent == Path("Ideas later")
    assert [p.name for p in folders_under(notes.root)] == ["Ideas later"]


def test_existing_folders_with_other_names_are_used_as_they_are(notes: Vault) -> None:
    odd = notes.root / "Q3: plan?" / "a."  # fine on Linux, made by the user or a sync
    odd.mkdir(parents=True)

    result = notes.write("Q3: plan?/a.", "T", "x")
    assert result.path == "Q3: plan?/a./T.md"
    assert notes.write("Q3: plan?/a./new?", "U", "y").path == "Q3: plan?/a./new/U.md"
    assert notes.read("Q3: plan?/a./T").content.strip() == "x"
    assert sorted(p.relative_to(notes.root).as_posix() for p in folders_under(notes.root)) == [
        "Q3: plan?",
        "Q3: plan?/a.",
        "Q3: plan?/a./new",
    ]


def test_a_folder_differing_only_in_case_is_not_made_twice(notes: Vault) -> None:
    notes.write("Inbox", "A", "a")

    # Two folders "Inbox" and "inbox" cannot both exist on macOS or Windows.
    assert notes.write("inbox", "B", "b").path == "Inbox/B.md"
    assert notes.write("INBOX/Sub", "C", "c").path == "Inbox/Sub/C.md"
    assert [p.name for p in folders_under(notes.root) if p.parent == notes.root] == ["Inbox"]


def test_a_portable_spelling_finds_the_folder_it_would_have_made(notes: Vault) -> None:
    notes.write("Plans?", "A", "a")

    assert notes.write("Plans*", "B", "b").path == "Plans/B.md"


def test_a_file_in_the_way_is_a_clear_error(notes: Vault) -> None:
    (notes.root / "Taken").write_text("a file, not a folder")

    with pytest.raises(InvalidNote, match="'Taken/Sub' goes through the file 'Taken', not a folder"):
        notes.write("Taken/Sub", "T", "x")
    assert folders_under(notes.root) == []


def test_confinement_still_holds_for_hostile_folders(notes: Vault, outside: Path) -> None:
    (notes.root / "link").symlink_to(outside, target_is_directory=True)

    for folder in ("..", "../x", "link", "link/new?", ".obsidian", "a/../../x"):
        with pytest.raises(PathNotAllowed):
            notes.write(folder, "T", "x")
    assert list(outside.iterdir()) == []
    assert folders_under(notes.root) == [notes.root / "link"]
