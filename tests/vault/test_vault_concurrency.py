"""Many writers into one folder at once (the runner writes from worker threads, or two vaultbot
processes share a vault): nothing clobbered, nothing doubled, every note indexed."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor, wait
from pathlib import Path

import pytest

from tests.helpers import ROOT, subprocess_env
from vault import Vault
from vault.index import Entry, Queued, Snapshot

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


class HeldIndex:
    """Holds the index commit of one note back until ``expected`` more entries are in line behind
    it, so that those are committed together, in one transaction, as concurrent writers' are."""

    def __init__(
        self, notes: Vault, monkeypatch: pytest.MonkeyPatch, hold: str, behind: int, fail: str | None = None
    ) -> None:
        index = notes._catalog.index
        self.queued: list[str] = []
        self.batches: list[list[str]] = []
        self.holding = False
        self.changed = threading.Condition()
        real_queue, real_update = index.queue, index.update

        def queue(entry: Entry) -> Queued:
            queued = real_queue(entry)
            with self.changed:
                self.queued.append(entry.path)
                self.changed.notify_all()
            return queued

        def update(entries: Iterable[Entry], removed: Iterable[str] = (), *, expected: Snapshot | None = None) -> None:
            entries = list(entries)
            if any(entry.path == hold for entry in entries):
                with self.changed:
                    self.holding = True
                    self.changed.notify_all()
                    assert self.changed.wait_for(lambda: len(self.queued) > behind, timeout=20)
            self.batches.append([entry.path for entry in entries])
            if any(entry.path == fail for entry in entries):
                raise sqlite3.OperationalError("disk I/O error")
            real_update(entries, removed, expected=expected)

        monkeypatch.setattr(index, "queue", queue)
        monkeypatch.setattr(index, "update", update)

    def wait_holding(self) -> None:
        """Until the held note's commit has begun: whatever is queued from now on waits for it."""
        with self.changed:
            assert self.changed.wait_for(lambda: self.holding, timeout=20)

    def wait_queued(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: len(self.queued) >= count, timeout=20)


def test_a_note_created_and_appended_to_at_once_is_indexed_as_last_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No check of the disk before searching (it would mend the index and hide the damage).
    notes = Vault(tmp_path / "lazy", max_staleness=3600)
    held = HeldIndex(notes, monkeypatch, hold="Other/Blocker.md", behind=2)
    with notes, ThreadPoolExecutor(3) as pool:
        blocker = pool.submit(notes.write, "Other", "Blocker", "holds the index")
        held.wait_holding()
        created = pool.submit(notes.write, "Inbox", "Note", "first words")
        held.wait_queued(2)
        appended = pool.submit(notes.write, "Inbox", "Note", "appended words", mode="append")
        for write in (blocker, created, appended):
            write.result(timeout=30)

        assert ["Inbox/Note.md", "Inbox/Note.md"] in held.batches  # both writes in one commit
        assert [hit.path for hit in notes.search("appended")] == ["Inbox/Note.md"]
        assert [hit.path for hit in notes.search("first")] == ["Inbox/Note.md"]


def test_every_write_in_a_failed_index_commit_fails(notes: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    held = HeldIndex(notes, monkeypatch, hold="Other/Blocker.md", behind=2, fail="Inbox/A.md")
    with ThreadPoolExecutor(3) as pool:
        blocker = pool.submit(notes.write, "Other", "Blocker", "holds the index")
        held.wait_holding()
        writes = [pool.submit(notes.write, "Inbox", title, "text") for title in ("A", "B")]
        blocker.result(timeout=30)
        for write in writes:
            # B's note is not searchable either: it must not be reported as saved like a good one.
            with pytest.raises(sqlite3.OperationalError):
                write.result(timeout=30)

    assert sorted(["Inbox/A.md", "Inbox/B.md"]) in [sorted(batch) for batch in held.batches]
    assert notes.write("Inbox", "C", "text").created  # the index is not stuck
