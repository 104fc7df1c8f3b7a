"""Creating, appending to and replacing notes."""

from __future__ import annotations

import os
import re
import threading
from pathlib import Path

import pytest
import yaml

import vault.folder_names
import vault.vault
from vault import InvalidNote, NoteChanged, NoteNotFound, Vault

ISO_SECONDS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def front_and_body(path: Path) -> tuple[dict, str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    _, block, body = text.split("---\n", 2)
    return yaml.safe_load(block), body


def test_create_writes_front_matter_and_body(notes: Vault) -> None:
    result = notes.write("Inbox", "Oat Milk", "Buy **oat milk**.", tags=["shopping"], confidence=80, source="telegram")

    assert (result.path, result.created, result.unchanged, result.renamed) == ("Inbox/Oat Milk.md", True, False, False)
    assert result.previous_version is None
    meta, body = front_and_body(notes.root / "Inbox" / "Oat Milk.md")
    assert list(meta) == ["title", "tags", "confidence", "created", "updated", "source"]
    assert meta["title"] == "Oat Milk"
    assert meta["tags"] == ["shopping"]
    assert meta["confidence"] == 80
    assert meta["source"] == "telegram"
    assert ISO_SECONDS.match(meta["created"]) and meta["created"] == meta["updated"]
    assert body.strip() == "Buy **oat milk**."


def test_create_without_optional_fields(notes: Vault) -> None:
    notes.write("", "Plain", "text")

    meta, _ = front_and_body(notes.root / "Plain.md")
    assert meta["tags"] == []
    assert "confidence" not in meta and "source" not in meta


def test_identical_create_is_unchanged_and_writes_no_second_file(notes: Vault) -> None:
    first = notes.write("Inbox", "Oat Milk", "Buy oat milk.")
    again = notes.write("Inbox", "Oat Milk", "Buy oat milk.\n")

    assert again.path == first.path
    assert (again.created, again.unchanged, again.renamed) == (False, True, False)
    assert sorted(p.name for p in (notes.root / "Inbox").iterdir()) == ["Oat Milk.md"]


def test_different_content_same_title_gets_a_unique_name(notes: Vault) -> None:
    notes.write("Inbox", "Oat Milk", "one")
    second = notes.write("Inbox", "Oat Milk", "two")
    third = notes.write("Inbox", "Oat Milk", "three")
    second_again = notes.write("Inbox", "Oat Milk", "two")

    assert (second.path, second.created, second.renamed) == ("Inbox/Oat Milk 2.md", True, True)
    assert third.path == "Inbox/Oat Milk 3.md"
    assert second_again.path == "Inbox/Oat Milk 2.md" and second_again.unchanged
    assert notes.read("Inbox/Oat Milk 2").content.strip() == "two"


def test_collisions_are_case_insensitive(notes: Vault) -> None:
    (notes.root / "oat milk.md").write_text("written by hand\n", encoding="utf-8")

    result = notes.write("", "Oat Milk", "something else")

    assert result.path == "Oat Milk 2.md" and result.renamed
    assert notes.write("", "OAT MILK", "written by hand").unchanged


def test_append_adds_content_and_merges_tags(notes: Vault) -> None:
    notes.write("Log", "Today", "first", tags=["a"])
    before, _ = front_and_body(notes.root / "Log" / "Today.md")

    result = notes.write("Log", "Today", "second", tags=["b", "a"], mode="append")

    assert (result.path, result.created, result.unchanged) == ("Log/Today.md", False, False)
    meta, body = front_and_body(notes.root / "Log" / "Today.md")
    assert body.strip() == "first\n\nsecond"
    assert meta["tags"] == ["a", "b"]
    assert meta["created"] == before["created"]


def test_append_is_idempotent(notes: Vault) -> None:
    notes.write("Log", "Today", "first")
    notes.write("Log", "Today", "second", mode="append")

    again = notes.write("Log", "Today", "second", mode="append")

    assert again.unchanged
    assert notes.read("Log/Today").content.count("second") == 1


def test_append_to_missing_note_creates_it(notes: Vault) -> None:
    result = notes.write("Log", "New", "hello", mode="append")

    assert result.created and result.path == "Log/New.md"


def test_append_keeps_a_hand_written_note_without_front_matter(notes: Vault) -> None:
    (notes.root / "Diary.md").write_text("# Diary\n\nDear diary.\n", encoding="utf-8")

    notes.write("", "diary", "More.", mode="append")

    note = notes.read("Diary")
    assert note.content.strip() == "# Diary\n\nDear diary.\n\nMore."


def test_replace_keeps_the_previous_version(notes: Vault) -> None:
    notes.write("Ideas", "Plan", "old plan", tags=["x"])
    created = notes.read("Ideas/Plan").frontmatter["created"]
    old_text = (notes.root / "Ideas" / "Plan.md").read_text(encoding="utf-8")

    result = notes.write("Ideas", "Plan", "new plan", mode="replace", confidence=90)

    assert result.previous_version is not None
    assert result.previous_version.startswith(".vaultbot/versions/Ideas/Plan/")
    assert (notes.root / result.previous_version).read_text(encoding="utf-8") == old_text
    note = notes.read("Ideas/Plan")
    assert note.content.strip() == "new plan"
    assert note.frontmatter["created"] == created
    assert note.frontmatter["tags"] == ["x"]
    assert note.frontmatter["confidence"] == 90


def test_replace_with_identical_body_is_unchanged(notes: Vault) -> None:
    notes.write("", "Plan", "same")

    result = notes.write("", "Plan", "same", mode="replace")

    assert result.unchanged and result.previous_version is None
    assert not (notes.root / ".vaultbot" / "versions").exists()


def test_replace_refuses_after_an_outside_edit(notes: Vault) -> None:
    notes.write("", "Plan", "mine")
    note_file = notes.root / "Plan.md"
    note_file.write_text(note_file.read_text(encoding="utf-8") + "edited in Obsidian\n", encoding="utf-8")
    os.utime(note_file, ns=(1, 1))

    with pytest.raises(NoteChanged, match="changed on disk"):
        notes.write("", "Plan", "overwrite", mode="replace")
    assert "edited in Obsidian" in note_file.read_text(encoding="utf-8")

    notes.read("Plan")
    assert notes.write("", "Plan", "overwrite", mode="replace").previous_version


def test_replace_without_earlier_read_does_not_check(notes: Vault) -> None:
    (notes.root / "Hand.md").write_text("by hand\n", encoding="utf-8")

    with Vault(notes.root) as fresh:
        assert fresh.write("", "Hand", "by bot", mode="replace").previous_version


def test_replace_on_missing_note_is_not_found(notes: Vault) -> None:
    with pytest.raises(NoteNotFound):
        notes.write("", "Nothing", "x", mode="replace")


@pytest.mark.parametrize(
    ("title", "content", "mode"),
    [("   ", "x", "create"), ("T", "a\x00b", "create"), ("T", "x", "overwrite")],
)
def test_invalid_input_is_refused(notes: Vault, title: str, content: str, mode: str) -> None:
    with pytest.raises(InvalidNote):
        notes.write("", title, content, mode=mode)
    assert list(notes.root.rglob("*.md")) == []


def test_no_temporary_files_are_left(notes: Vault) -> None:
    notes.write("A", "One", "1")
    notes.write("A", "One", "2")
    notes.write("A", "One", "more", mode="append")
    notes.read("A/One")
    notes.write("A", "One", "replaced", mode="replace")

    leftovers = [p for p in notes.root.rglob("*") if "tmp" in p.name]
    assert leftovers == []


def test_root_is_created(tmp_path: Path) -> None:
    with Vault(tmp_path / "deep" / "vault") as notes:
        assert notes.root.is_dir() and notes.root.is_absolute()


def test_concurrent_appends_lose_nothing(notes: Vault) -> None:
    notes.write("Log", "Busy", "start")
    others = [Vault(notes.root) for _ in range(4)]

    def append_lines(index: int) -> None:
        for line in range(5):
            others[index].write("Log", "Busy", f"line {index}-{line}", mode="append")

    threads = [threading.Thread(target=append_lines, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for other in others:
        other.close()

    body = notes.read("Log/Busy").content
    assert all(f"line {i}-{n}" in body for i in range(4) for n in range(5))


def test_failed_replace_leaves_no_folder_behind(notes: Vault) -> None:
    with pytest.raises(NoteNotFound):
        notes.write("Not/There", "T", "x", mode="replace")

    assert not (notes.root / "Not").exists()


def test_attachments_are_saved_once_and_never_overwrite(notes: Vault) -> None:
    first = notes.save_attachment("Attachments", "photo.JPG", b"\xff\xd8one")
    again = notes.save_attachment("Attachments", "photo.JPG", b"\xff\xd8one")
    other = notes.save_attachment("Attachments", "photo.jpg", b"\xff\xd8two")
    assert first == again == "Attachments/photo.jpg"
    assert other == "Attachments/photo 2.jpg"
    assert (notes.root / first).read_bytes() == b"\xff\xd8one"
    hostile = notes.save_attachment("Attachments", "../../evil.sh", b"x")
    assert hostile.startswith("Attachments/") and hostile.count("/") == 1
    assert (notes.root / hostile).read_bytes() == b"x"


def a_file_appears_after_the_name_is_chosen(monkeypatch: pytest.MonkeyPatch, name: str, text: bytes) -> None:
    """Right after the vault has read which names are taken, and before it writes, another program
    (Obsidian, a sync) creates ``name`` there: injected once at the folder listing, so the race is certain."""
    real = vault.folder_names.names_by_casefold
    appeared: list[Path] = []

    def names_by_casefold(directory: Path) -> dict[str, str]:
        taken = real(directory)
        if not appeared:
            appeared.append(directory / name)
            appeared[0].write_bytes(text)
        return taken

    monkeypatch.setattr(vault.folder_names, "names_by_casefold", names_by_casefold)


def test_create_never_overwrites_a_note_that_appears_mid_write(notes: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    a_file_appears_after_the_name_is_chosen(monkeypatch, "Milk.md", b"typed in Obsidian meanwhile")
    result = notes.write("Inbox", "Milk", "oat")
    assert (notes.root / "Inbox" / "Milk.md").read_bytes() == b"typed in Obsidian meanwhile"
    assert (result.path, result.created, result.renamed) == ("Inbox/Milk 2.md", True, True)
    assert front_and_body(notes.root / result.path)[1].strip() == "oat"


def test_an_attachment_never_overwrites_a_file_that_appears_mid_write(
    notes: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    (notes.root / "Attachments").mkdir()
    a_file_appears_after_the_name_is_chosen(monkeypatch, "photo.jpg", b"synced from the phone")
    saved = notes.save_attachment("Attachments", "photo.jpg", b"\xff\xd8ours")
    assert (notes.root / "Attachments" / "photo.jpg").read_bytes() == b"synced from the phone"
    assert saved == "Attachments/photo 2.jpg" and (notes.root / saved).read_bytes() == b"\xff\xd8ours"


@pytest.mark.parametrize("mode", ["replace", "append"])
def test_a_concurrent_reader_never_sees_a_partial_or_empty_note(notes: Vault, mode: str) -> None:
    padding = "x" * 20_000  # large enough that a non-atomic write is caught half done
    notes.write("", "Busy", f"v0 {padding}")
    path = notes.root / "Busy.md"
    bad: list[bytes] = []
    reads = 0
    started, done = threading.Event(), threading.Event()

    def reader() -> None:
        nonlocal reads
        while not done.is_set():
            data = path.read_bytes()
            reads += 1
            started.set()
            last = data.decode("utf-8").split("---\n", 2)[-1].strip("\n").rsplit("\n\n", 1)[-1]
            # Every version of the note is front matter, then entries ending with a whole "vN <padding>".
            tag, _, rest = last.partition(" ")
            if not data.startswith(b"---\n") or not re.fullmatch(r"v\d+", tag) or rest != padding:
                bad.append(data)

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        assert started.wait(10)
        for n in range(1, 40):
            notes.write("", "Busy", f"v{n} {padding}", mode=mode)
    finally:
        done.set()
        thread.join()
    assert reads > 1
    assert bad == [], f"{len(bad)} of {reads} reads saw a partial note, e.g. {bad[0][:80]!r}…"
    assert f"v39 {padding}" in path.read_text(encoding="utf-8")
