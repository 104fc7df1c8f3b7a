"""Writers into one folder share its fsyncs (group commit), and none reports a note saved before
an fsync of the folder that began after the note's name was linked in has finished."""

from __future__ import annotations

import os
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from vault import Vault

WRITERS = 6


class Disk:
    """Records, in order, the links into one folder, that folder's fsyncs and the writes returning.

    The folder's first fsync waits until every writer has linked its note, as a slow disk would
    keep it busy: whoever links meanwhile must wait for a later fsync, and can share one."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
        self.folder = folder
        self.events: list[tuple[str, str]] = []
        self._changed = threading.Condition()
        self._links = 0
        real_link, real_fsync = os.link, os.fsync

        def link(source: str | Path, target: str | Path) -> None:
            real_link(source, target)
            if Path(target).parent == folder:
                self.note("link", Path(target).name, linked=True)

        def fsync(fd: int) -> None:
            if not stat.S_ISDIR(os.fstat(fd).st_mode) or os.fstat(fd).st_ino != folder.stat().st_ino:
                real_fsync(fd)
                return
            first = not any(kind == "fsync-start" for kind, _ in self.events)
            self.note("fsync-start", "")
            if first:
                with self._changed:
                    assert self._changed.wait_for(lambda: self._links == WRITERS, timeout=20)
            real_fsync(fd)
            self.note("fsync-end", "")

        monkeypatch.setattr(os, "link", link)
        monkeypatch.setattr(os, "fsync", fsync)

    def note(self, kind: str, name: str, *, linked: bool = False) -> None:
        with self._changed:
            self.events.append((kind, name))
            self._links += linked
            self._changed.notify_all()

    def covered(self, name: str) -> bool:
        """Whether an fsync that started after ``name`` was linked ended before its write returned."""
        linked, returned = self.events.index(("link", name)), self.events.index(("returned", name))
        starts = [i for i, (kind, _) in enumerate(self.events) if kind == "fsync-start" and linked < i < returned]
        ends = [i for i, (kind, _) in enumerate(self.events) if kind == "fsync-end" and i < returned]
        return any(end > start for start in starts for end in ends)


def test_concurrent_creates_in_one_folder_share_its_fsyncs_and_each_waits_for_one_after_it(
    notes: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    (notes.root / "Inbox").mkdir()
    disk = Disk(monkeypatch, notes.root / "Inbox")

    def write(i: int) -> str:
        path = Path(notes.write("Inbox", f"Note {i}", f"body {i}").path).name
        disk.note("returned", path)
        return path

    with ThreadPoolExecutor(WRITERS) as pool:
        names = list(pool.map(write, range(WRITERS)))

    assert sorted(p.name for p in (notes.root / "Inbox").iterdir()) == sorted(names)
    assert all(disk.covered(name) for name in names)
    # The first fsync, then one for everyone who linked while it ran (a writer that reaches the
    # folder's fsyncs only once that one began needs one more); one each without sharing.
    assert 2 <= sum(kind == "fsync-start" for kind, _ in disk.events) < WRITERS
