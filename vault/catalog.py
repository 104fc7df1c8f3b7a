"""Keeping the search index true to the disk: an incremental scan, and vaultbot's own writes.

The :class:`~vault.index.Index` is a cache of the Markdown files; this module decides when and
what to re-read. A scan stats every note (and every document whose text vaultbot reads: a PDF, a
text, CSV or JSON file, indexed by its text under its file name), re-reads only those whose size or mtime changed,
re-indexes only those whose content hash changed, and forgets notes deleted or renamed outside
vaultbot. Searches and listings ask for a fresh catalog first (:meth:`Catalog.fresh`). Documents are
not read during the scan, which holds the catalog's lock: they go to a
:class:`~vault.document_backlog.Backlog` that reads them in the background.

vaultbot's own writes are not committed to the index one by one: a write puts its note in line and
returns, and the line is committed in one transaction when it is :data:`BATCH` long, before any
search, listing or sync answers, and on close. So a note is searchable as soon as its write
returns, a write costs a share of one commit instead of a commit of its own (and of the WAL
checkpoints they add up to), and a write whose note is saved never fails because of the index:
if a commit fails, the notes stay on disk and the next search brings the index in line with it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from vault import frontmatter, meta
from vault.conflicts import is_conflict_copy
from vault.document_backlog import Backlog
from vault.document_reader import DocumentReader
from vault.documents import is_document
from vault.index import Entry, Index
from vault.notes import SyncReport
from vault.paths import NOTE_SUFFIX, follow_links, is_inside

log = logging.getLogger(__name__)

# A write commits the line once this many notes are in it (~0.2 ms CPU for a commit of one note,
# a few hundredths of a millisecond per note in a commit of dozens).
BATCH = 64


class Listener(Protocol):
    """Told which notes changed and which are gone, as the catalog learns of it (the meaning index)."""

    def changed(self, paths: list[str]) -> None:
        """Notes written or edited."""
        ...

    def removed(self, paths: list[str]) -> None:
        """Notes deleted or renamed away."""
        ...


class Catalog:
    """The index of one vault root, and when to check it against the disk."""

    def __init__(self, root: Path, index_path: Path, *, max_staleness: float, reader: DocumentReader) -> None:
        self.root = root
        self.index = Index(index_path)
        self.documents = Backlog(root, reader, self.add)
        self.max_staleness = max_staleness
        self.listener: Listener | None = None
        self._sync_lock = threading.Lock()
        self._synced_at: float | None = None
        self._walk_seconds = 0.0
        # Set when a commit of vaultbot's own writes failed: the disk is checked before the next answer.
        self._missed = False

    def close(self) -> None:
        """Stop reading documents, commit what is in line for the index, and close it."""
        self.documents.close()
        self.flush()
        self.index.close()

    def flush(self) -> None:
        """Commit every note vaultbot wrote so far to the index.

        A failure (a full disk, the index locked by another program) is logged, not raised: the
        notes are saved, and the index is a cache, so the next :meth:`fresh` checks the disk and
        indexes them from their files.
        """
        try:
            self.index.flush()
        except sqlite3.Error as exc:
            self._missed = True
            log.warning(
                "The search index could not record the latest notes (%s); they are saved, "
                "and the index takes them from the disk before the next search.",
                exc,
            )

    def settle(self) -> None:
        """Commit the line if it is long enough; a write calls this after saving its note."""
        if self.index.pending() >= BATCH:
            self.flush()

    def sync(self) -> SyncReport:
        """Bring the search index in line with the disk: re-read only files whose size or mtime
        changed, re-index only those whose content (hash) changed, and forget files deleted or
        renamed outside vaultbot."""
        self.flush()  # the index's rows, not the line, are what the disk is compared with
        with self._sync_lock:
            self._missed = False  # a commit failing from here on is after this check of the disk
            started = time.monotonic()
            known = self.index.known()
            changed: list[Entry] = []
            touched: list[tuple[str, int, int]] = []
            documents: list[tuple[str, os.stat_result]] = []
            present: set[str] = set()
            for rel, stat in self._scan():
                present.add(rel)
                before = known.get(rel)
                if before is not None and before[:2] == (stat.st_size, stat.st_mtime_ns):
                    continue
                if is_document(rel):
                    documents.append((rel, stat))  # read in the background, never under this lock
                    continue
                entry = self._entry(rel, stat)
                if entry is None:
                    continue
                if before is not None and before[2] == entry.sha256:
                    touched.append((rel, stat.st_size, stat.st_mtime_ns))  # same bytes: a touch or a copy
                else:
                    changed.append(entry)
            removed = [rel for rel in known if rel not in present]
            self.documents.want(documents)
            try:
                if changed or removed:
                    self.index.update(changed, removed, expected=known)
                if touched:
                    self.index.touch(touched, expected=known)
            except sqlite3.Error as exc:
                # As with a failed flush: the index is a cache, so the answer comes from it as it
                # stands and the disk is checked again before the next one.
                self._missed = True
                log.warning(
                    "The search index could not take the notes changed on disk (%s); this answer may "
                    "miss them, and the index is brought up to date before the next search.",
                    exc,
                )
                return SyncReport(indexed=0, removed=0, seconds=round(time.monotonic() - started, 4))
            if self.listener is not None and (changed or removed):
                self.listener.removed(removed)
                self.listener.changed([entry.path for entry in changed])
            self._walk_seconds = time.monotonic() - started
            self._synced_at = started
            return SyncReport(indexed=len(changed), removed=len(removed), seconds=round(time.monotonic() - started, 4))

    def fresh(self) -> None:
        """Commit vaultbot's own writes, and sync first if the last check of the disk is older than allowed."""
        self.flush()
        if self.max_staleness == 0 or self._missed:
            self.sync()
            return
        # A huge vault's disk check is slow; spacing checks by ten times its cost keeps answers fast.
        interval = max(self.max_staleness, 10 * self._walk_seconds)
        if self._synced_at is None or time.monotonic() - self._synced_at >= interval:
            self.sync()

    def _scan(self) -> Iterator[tuple[str, os.stat_result]]:
        # scandir, not os.walk with Path objects: a stat walk of a large vault must stay cheap.
        # Hidden entries are skipped and symlinked folders never entered; a symlinked note counts
        # only if it resolves inside the vault.
        prefix = len(str(self.root)) + 1
        stack = [str(self.root)]
        while stack:
            try:
                entries = list(os.scandir(stack.pop()))
            except OSError:
                continue
            for entry in entries:
                if entry.name.startswith(".") or is_conflict_copy(entry.name):
                    continue  # hidden, or a sync tool's second copy of a note: not a note of its own
                try:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                        continue
                    if not entry.name.lower().endswith(NOTE_SUFFIX) and not is_document(entry.name):
                        continue
                    if entry.is_symlink():
                        if not is_inside(self.root, follow_links(Path(entry.path))):
                            continue
                        stat = os.stat(entry.path)
                    else:
                        stat = entry.stat(follow_symlinks=False)
                except OSError:
                    continue  # gone between listing and stat: the next sync sees the truth
                yield entry.path[prefix:].replace(os.sep, "/"), stat

    def _entry(self, rel: str, stat: os.stat_result) -> Entry | None:
        try:
            data = (self.root / rel).read_bytes()
        except OSError:
            return None
        return self.entry(rel, data, stat)

    def record(self, rel: str, data: bytes, stat: os.stat_result) -> str:
        """Put a note vaultbot just wrote in line for the index, from the bytes it wrote; returns their digest."""
        entry = self.entry(rel, data, stat)
        self.add(entry)
        return entry.sha256

    @staticmethod
    def entry(rel: str, data: bytes, stat: os.stat_result, parsed: tuple[dict[str, Any], str] | None = None) -> Entry:
        """What the index keeps of the note ``data`` at ``rel`` (built here, so a writer can do it
        before taking a lock and :meth:`add` it under the lock). ``parsed`` is ``data``'s front
        matter and body as :func:`~vault.frontmatter.parse` gives them, when the caller has them."""
        front, body = parsed if parsed is not None else frontmatter.parse(data.decode("utf-8", errors="replace"))
        stem = rel.rsplit("/", 1)[-1][: -len(NOTE_SUFFIX)]
        updated = meta.as_datetime(front.get("updated")) or dt.datetime.fromtimestamp(stat.st_mtime, dt.UTC)
        return Entry(
            path=rel,
            size=stat.st_size,
            mtime_ns=stat.st_mtime_ns,
            sha256=hashlib.sha256(data).hexdigest(),
            title=meta.title_of(front, stem),
            tags=meta.clean_tags(front.get("tags")),
            aliases=meta.clean_aliases(front.get("aliases")),
            updated=meta.iso(updated),
            body=body,
        )

    def add(self, entry: Entry) -> None:
        """Put a note vaultbot just wrote in line for the index (committed in the order of its writes)."""
        self.index.queue(entry)
        if self.listener is not None:
            self.listener.changed([entry.path])
