"""Documents found on disk, read for the search index in the background.

A check of the disk (:meth:`~vault.catalog.Catalog.sync`) runs under the catalog's lock, and every
search may run one; reading a PDF there would make every search wait for it. So the check only hands
the documents it finds new or changed to a :class:`Backlog`, whose thread reads them one at a time
through the sandboxed :class:`~vault.document_reader.DocumentReader` and puts each in line for the index
once read. Until then a search does not find the document's words (a document a message brings is read
at once, for the model, and indexed then).
"""

from __future__ import annotations

import collections
import datetime as dt
import hashlib
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from vault import meta
from vault.document_reader import DocumentReader
from vault.documents import DocumentText
from vault.index import Entry

log = logging.getLogger(__name__)


def read_entry(path: Path, rel: str, reader: DocumentReader) -> tuple[Entry, DocumentText]:
    """Read the document at ``path`` (vault-relative ``rel``), and what the index keeps of it: its file
    name as the title, its text as the body (nothing when it cannot be read). A file too big to read is
    hashed in pieces, never held whole. Raises ``OSError`` when the file cannot be read."""
    with open(path, "rb") as file:
        stat = os.fstat(file.fileno())
        text = reader.limits.too_big(stat.st_size)
        if text is None:
            data = file.read()
            digest = hashlib.sha256(data).hexdigest()
            text = reader.read(data, rel)
        else:
            digest = hashlib.file_digest(file, "sha256").hexdigest()
    entry = Entry(
        path=rel,
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        sha256=digest,
        title=rel.rsplit("/", 1)[-1],
        tags=[],
        aliases=[],
        updated=meta.iso(dt.datetime.fromtimestamp(stat.st_mtime, dt.UTC)),
        body=text.text,
    )
    return entry, text


class Backlog:
    """Documents waiting to be read for the index, and the thread that reads them."""

    def __init__(self, root: Path, reader: DocumentReader, add: Callable[[Entry], None]) -> None:
        """``add`` puts an entry in line for the index (:meth:`~vault.catalog.Catalog.add`)."""
        self._root = root
        self._reader = reader
        self._add = add
        self._changed = threading.Condition()
        # path -> (size, mtime_ns) of the version waiting or being read, so a second check does not ask again.
        self._wanted: dict[str, tuple[int, int]] = {}
        self._line: collections.deque[str] = collections.deque()
        self._busy = False
        self._closed = False
        self._thread: threading.Thread | None = None

    def want(self, found: list[tuple[str, os.stat_result]]) -> None:
        """Read these documents (path, stat as the check saw it), unless that version is already waiting."""
        with self._changed:
            if self._closed:
                return
            for rel, stat in found:
                stamp = (stat.st_size, stat.st_mtime_ns)
                if self._wanted.get(rel) == stamp:
                    continue
                if rel not in self._wanted:
                    self._line.append(rel)
                self._wanted[rel] = stamp
            if self._line and self._thread is None:
                self._thread = threading.Thread(target=self._run, name="vault-documents", daemon=True)
                self._thread.start()
            self._changed.notify_all()

    def wait(self, timeout: float) -> bool:
        """Wait until every document waiting is read and in line for the index; False on timeout."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._line and not self._busy, timeout)

    def stop(self) -> None:
        """Take no more documents, and say nothing of one whose reading is cut short from here on."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()

    def close(self) -> None:
        """Stop, and wait for the thread: it ends after the document it is reading (close the reader
        between :meth:`stop` and this, to end that one now)."""
        self.stop()
        with self._changed:
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: self._line or self._closed)
                if self._closed:
                    return
                rel = self._line.popleft()
                self._busy = True
            try:
                self._read(rel)
            finally:
                with self._changed:
                    self._busy = False
                    self._wanted.pop(rel, None)
                    self._changed.notify_all()

    def _read(self, rel: str) -> None:
        try:
            entry, _ = read_entry(self._root / rel, rel, self._reader)
        except FileNotFoundError:
            return  # gone since the check: the next one forgets it
        except OSError as exc:
            if not self._closed:
                log.warning("The document %s could not be read for the search index: %s", rel, exc)
            return
        except Exception:  # one odd document must not stop the others being read
            log.exception("The document %s could not be read for the search index", rel)
            return
        self._add(entry)
