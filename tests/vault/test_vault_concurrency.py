"""Many writers into one folder at once (the runner writes from worker threads, or two vaultbot
processes share a vault): nothing clobbered, nothing doubled, every note indexed."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import pytest

from tests.helpers import ROOT, subprocess_env
from vault import Vault
from vault.catalog import BATCH

# Another vaultbot process on the same vault, caught in the middle of an append to Inbox/Log.md:
# it holds the folder's lock and has read the note, and writes its line once told to.
OTHER_PROCESS = """
import sys
from pathlib import Path
from vault import Vault
from vault.files import exclusive_lock, write_atomic

with Vault(sys.argv[1]) as notes:
    folder = notes.root / "Inbox"
    with exclusive_lock(notes._lock_file(folder)):
        before = (folder / "Log.md").read_bytes()
        print("holding the lock", flush=True)
        sys.stdin.readline()
        write_atomic(folder / "Log.md", before + b"\\nthe other process's line\\n")
"""


def test_concurrent_creates_of_one_title_keep_every_note(notes: Vault) -> None:
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: notes.write("Inbox", "Same", f"body {i}"), range(24)))

    paths = [r.path for r in results]
    assert len(set(paths)) == 24 and all(r.created for r in results)
    bodies = sorted(notes.read(path).content.strip() for path in paths)
    assert bodies == sorted(f"body {i}" for i in range(24))
    assert sorted(p.name for p in (notes.root / "Inbox").iterdir()) == sorted(Path(p).name for p in paths)
    assert len(notes.search("body", limit=100)) == 24


def test_concurrent_saves_of_the_same_note_make_one_note(notes: Vault) -> None:
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: notes.write("Inbox", "Once", "the same text"), range(16)))

    assert {r.path for r in results} == {"Inbox/Once.md"}
    assert sum(r.created for r in results) == 1
    assert [p.name for p in (notes.root / "Inbox").iterdir()] == ["Once.md"]


def test_an_append_waits_while_another_process_holds_the_folder(notes: Vault) -> None:
    notes.write("Inbox", "Log", "first line")
    other = subprocess.Popen(
        [sys.executable, "-c", OTHER_PROCESS, str(notes.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=subprocess_env(),
        # From the checkout, not the test's tmp_path: mutmut's copy of the vault reads its settings there.
        cwd=ROOT,
    )
    try:
        assert other.stdout is not None and other.stdin is not None
        assert other.stdout.readline() == "holding the lock\n"
        with ThreadPoolExecutor(1) as pool:
            ours = pool.submit(notes.write, "Inbox", "Log", "our line", mode="append")
            # Without the lock our append would read the note now and finish in milliseconds, and the
            # other process would then put back what it read: our line would be lost.
            assert not wait([ours], timeout=0.5).done
            other.stdin.write("go\n")
            other.stdin.flush()
            ours.result(timeout=30)
    finally:
        other.communicate(timeout=30)
    assert other.returncode == 0
    assert notes.read("Inbox/Log").content.split() == "first line the other process's line our line".split()


def test_a_note_created_and_appended_to_at_once_is_indexed_as_last_written(tmp_path: Path) -> None:
    # No check of the disk before searching (it would mend the index and hide the damage): both
    # writes wait in line for the index and are committed together, in the order they were made.
    with Vault(tmp_path / "lazy", max_staleness=3600) as notes:
        notes.write("Inbox", "Note", "first words")
        notes.write("Inbox", "Note", "appended words", mode="append")
        assert [hit.path for hit in notes.search("appended")] == ["Inbox/Note.md"]
        assert [hit.path for hit in notes.search("first")] == ["Inbox/Note.md"]


def test_a_note_whose_index_commit_fails_is_still_saved_and_found_once_the_index_is_free(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A real fault: another program holds the index's write lock past SQLite's busy timeout while a
    # write commits the line. The notes are on disk, so their writes succeed; the index catches up.
    # Lazy: only the failed commit may make it check the disk before the search.
    with Vault(tmp_path / "lazy", max_staleness=3600) as notes:
        other = sqlite3.connect(notes.root / ".vaultbot" / "index.db", isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            written = [notes.write("Inbox", f"Note {i}", f"kept words {i}") for i in range(BATCH)]
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert all(result.created for result in written)
        assert "could not record" in caplog.text and "locked" in caplog.text
        found = {hit.path for hit in notes.search("kept", limit=BATCH + 1)}
        assert found == {f"Inbox/Note {i}.md" for i in range(BATCH)}


def test_a_search_while_another_program_holds_the_index_answers_from_it_and_catches_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The disk check before the search finds a note typed in Obsidian, but another program holds the
    # index's write lock past SQLite's busy timeout: the search still answers, from the index as it is.
    with Vault(tmp_path / "eager", max_staleness=0) as notes:
        notes.write("Inbox", "Kept", "kept words")
        assert [hit.path for hit in notes.search("kept")] == ["Inbox/Kept.md"]
        (notes.root / "Inbox" / "Typed.md").write_text("kept words typed in Obsidian\n")
        other = sqlite3.connect(notes.root / ".vaultbot" / "index.db", isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            while_locked = [hit.path for hit in notes.search("kept")]
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert while_locked == ["Inbox/Kept.md"]
        assert "could not take the notes changed on disk" in caplog.text and "locked" in caplog.text
        assert {hit.path for hit in notes.search("kept")} == {"Inbox/Kept.md", "Inbox/Typed.md"}


# A vaultbot process that saves notes and is killed before its search index commits them (the index
# commits notes in batches of catalog.BATCH, so a handful of notes is still waiting when it dies).
KILLED_PROCESS = """
import os, signal, sys
from vault import Vault

notes = Vault(sys.argv[1])
for i in range(5):
    notes.write("Inbox", f"zebra {i}", "striped body")
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_notes_saved_by_a_process_killed_before_its_index_commit_are_found_after(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_PROCESS, str(root)], env=subprocess_env(), cwd=ROOT, timeout=60, check=False
    )
    assert killed.returncode == -9

    with Vault(root) as notes:
        found = notes.search("striped", limit=10)
    assert sorted(hit.title for hit in found) == [f"zebra {i}" for i in range(5)]
