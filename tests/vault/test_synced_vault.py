"""A vault that a sync tool writes into at the same moment as the bot: a second process stands in
for Syncthing (tests/vault/sync_tool.py), replacing notes and leaving conflict copies."""

from __future__ import annotations

import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from vault import NoteChanged, PathNotAllowed, Vault, find_conflicts, is_conflict_copy

SYNC_TOOL = Path(__file__).with_name("sync_tool.py")
DAY = datetime(2026, 11, 23, 9, 30)
PHONE = re.compile(r"phone version (\d+)")


@pytest.mark.timeout(120)
def test_a_sync_tool_replacing_notes_while_the_bot_writes_loses_no_text(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    with Vault(root, max_staleness=0) as notes:
        notes.write("", "Shared", "phone version 0", mode="create")
        notes.daily_note("the first line", when=DAY)
        tool = subprocess.Popen([sys.executable, str(SYNC_TOOL), str(root), "300"], stdout=subprocess.PIPE, text=True)
        assert tool.stdout is not None and tool.stdout.readline() == "ready\n"
        appended: list[str] = []
        replaced = refused = 0
        while tool.poll() is None:
            line = f"bot line {len(appended) + 1}"
            notes.daily_note(line, when=DAY)  # raises rather than report a line it did not add
            appended.append(line)
            seen = PHONE.findall(notes.read("Shared").content)[-1]
            try:
                text = f"bot version based on phone version {seen}"
                notes.write("", "Shared", text, mode="replace", read={"Shared.md"})
                replaced += 1
            except NoteChanged:
                refused += 1  # the phone's version came in since it was read: not replaced unseen
        done, copies, problems = tool.stdout.read().split(" ", 2)
        tool.stdout.close()
        assert tool.wait() == 0
        assert (done, problems.strip()) == ("done", "")  # no empty note, nothing replaced unseen

        daily = sorted((root / "Daily").iterdir())
        text = "\n".join(path.read_text() for path in daily)
        assert [line for line in appended if f"{line}\n" not in text + "\n"] == []
        assert [k for k in range(1, 301) if f"phone line {k}\n" not in text + "\n"] == []
        assert replaced > 0 and len(appended) > 10
        assert [p for p in root.rglob("*.md") if p.stat().st_size == 0] == []

        named = {conflict.path for conflict in find_conflicts(root)}
        on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*.md") if is_conflict_copy(p.name)}
        # The tool's own copies, and the bot's (kept when a third write came in over its exchange).
        assert named == on_disk and len([p for p in on_disk if "-ABCDEFG" in p]) == int(copies)
        notes.sync()
        found = {hit.path for hit in notes.search("phone line", limit=50)}
        assert found and not any(is_conflict_copy(path) for path in found)


def test_conflict_copies_and_markers_are_named_and_not_searched_as_notes(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    with Vault(root, max_staleness=0) as notes:
        notes.write("Projects", "Garden", "plant the tulips", mode="create")
        (root / "Projects" / "Garden.sync-conflict-20261123-140501-ABCDEFG.md").write_text("plant the tulips and roses")
        (root / "Projects" / "Garden (Conflicted copy Pixel 8 202611231405).md").write_text("plant the tulips, roses")
        (root / "Plans.md").write_text("<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> phone\n")
        (root / "Recipes (copy).md").write_text("not a conflict: a person's own name")
        notes.sync()
        assert {hit.path for hit in notes.search("tulips")} == {"Projects/Garden.md"}
    assert [(c.path, c.kind) for c in find_conflicts(root)] == [
        ("Plans.md", "markers"),
        ("Projects/Garden (Conflicted copy Pixel 8 202611231405).md", "copy"),
        ("Projects/Garden.sync-conflict-20261123-140501-ABCDEFG.md", "copy"),
    ]


@pytest.mark.parametrize("folder", [".obsidian", ".trash", ".stfolder", ".git", "Notes/.git"])
def test_the_sync_tools_and_obsidians_folders_are_never_written(tmp_path: Path, folder: str) -> None:
    with Vault(tmp_path / "vault") as notes:
        with pytest.raises(PathNotAllowed):
            notes.write(folder, "settings", "overwrite it", mode="create")
        with pytest.raises(PathNotAllowed):
            notes.save_attachment(folder, "x.png", b"\x89PNG")
    assert not (tmp_path / "vault" / folder).exists()


@pytest.mark.parametrize("exchange", [True, False], ids=["renameat2 exchange", "check before rename"])
def test_a_note_changed_since_it_was_read_is_kept_and_handed_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    import vault.swap

    monkeypatch.setattr(vault.swap, "_exchanges", [exchange and vault.swap._exchanges[0]])
    note = tmp_path / "Daily.md"
    note.write_bytes(b"the phone's version")
    assert vault.swap.swap_in(note, b"the bot's version", based_on=b"what the bot read") == b"the phone's version"
    assert note.read_bytes() == b"the phone's version"
    assert vault.swap.swap_in(note, b"the bot's version", based_on=b"the phone's version") is None
    assert note.read_bytes() == b"the bot's version"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["Daily.md"]  # no staged file left behind
