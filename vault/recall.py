"""Keeping the meaning index in step with the notes: chunking, and a background thread that embeds.

The keyword index (``vault.catalog``) notices every change, vaultbot's own writes and edits made on disk;
it tells :class:`Recall` which notes changed and which are gone. Changed notes wait in line for the
embedding thread, which reads each from disk, cuts it into chunks, embeds them and stores the vectors
with the hash of the bytes it read. On start, notes whose hash matches their vectors are left alone,
so an unchanged vault re-embeds nothing, and a missing or damaged vector file is simply rebuilt.

Opening the vectors file and loading the model happen in that thread too, so opening a vault waits for
neither. As soon as both are done (:attr:`Recall.ready`, about a second), search answers by meaning with
every note embedded so far, and by words alone for the rest; before that, by words alone.
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vault import frontmatter, meta
from vault.embedder import Embedder
from vault.paths import NOTE_SUFFIX
from vault.vectors import Neighbour, VectorStore

log = logging.getLogger(__name__)

# Words a chunk holds: long enough to carry a topic, short enough that one topic is not averaged away.
CHUNK_WORDS = 120
# A huge note (a 10 MB log pasted in) is embedded for its first this-many chunks; the rest is found by its words.
MAX_CHUNKS = 32
# One "word" is at most this long, so a file without spaces (binary saved as .md) still splits.
_WORD = re.compile(r"\S{1,40}")
# Notes embedded per model call: large enough to amortise the call, small enough that a search waits little.
_BATCH = 16
# Threads that embed: two use both cores of a small machine, and on a busy one they get two shares of it
# (docs/search.md has the measure); each holds its BLAS to one thread.
EMBEDDING_THREADS = 2


@dataclass(frozen=True)
class Chunked:
    """A note cut for embedding: the hash of the bytes read, each chunk's text and start in the body."""

    sha256: str
    texts: list[str]
    starts: list[int]


def chunk(rel: str, data: bytes) -> Chunked:
    """The note ``data`` at ``rel`` cut into chunks, each prefixed with the note's title."""
    front, body = frontmatter.parse(data.decode("utf-8", errors="replace"))
    stem = rel.rsplit("/", 1)[-1][: -len(NOTE_SUFFIX)]
    title = meta.title_of(front, stem)
    texts: list[str] = []
    starts: list[int] = []
    words: list[str] = []
    start = 0
    for match in _WORD.finditer(body):
        if not words:
            start = match.start()
        words.append(match.group())
        if len(words) == CHUNK_WORDS:
            texts.append(f"{title}\n{' '.join(words)}")
            starts.append(start)
            words = []
            if len(texts) == MAX_CHUNKS:
                break
    if words or not texts:  # an empty note is still its title
        texts.append(f"{title}\n{' '.join(words)}".strip())
        starts.append(start)
    return Chunked(hashlib.sha256(data).hexdigest(), texts, starts)


class Recall:
    """Vectors for every note of one vault root, kept current by a background thread. Thread-safe."""

    def __init__(self, root: Path, path: Path, embedder: Embedder) -> None:
        self._root = root
        self._path = path
        self._embedder = embedder
        self.store: VectorStore | None = None  # opened by the thread: None until then
        self._known: dict[str, tuple[int, int, str]] = {}
        self._gone: set[str] = set()  # notes deleted before the store was opened
        self._line: dict[str, None] = {}  # notes waiting to be embedded, oldest first
        self._changed = threading.Condition()
        self._working = 0  # notes taken from the line and not yet stored
        self._busy: set[str] = set()  # the notes being embedded now, by any thread
        self._helpers: list[threading.Thread] = []
        self._stop = False
        self._built = False
        self._loaded = False
        self._thread: threading.Thread | None = None

    def start(self, known: dict[str, tuple[int, int, str]]) -> None:
        """Start the thread: it opens the vectors, queues every note of the keyword index (``known``) whose
        vectors are missing or stale, forgets the rest, loads the model and embeds in the background."""
        self._known = known
        self._thread = threading.Thread(target=self._run, name="vault-recall", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the thread (after the batch it is embedding) and close the file."""
        with self._changed:
            self._stop = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join()
        for helper in self._helpers:
            helper.join()
        if self.store is not None:
            self.store.close()

    @property
    def ready(self) -> bool:
        """True once the vectors are open and the model is loaded: search answers by meaning with what is
        embedded so far, whether or not the rest is."""
        return self.store is not None and self._loaded

    def changed(self, paths: Iterable[str]) -> None:
        """Put notes that were written or edited in line to be embedded."""
        with self._changed:
            for path in paths:
                self._line.pop(path, None)
                self._line[path] = None
            self._changed.notify_all()

    def removed(self, paths: Iterable[str]) -> None:
        """Forget notes deleted or renamed away."""
        gone = list(paths)
        with self._changed:
            for path in gone:
                self._line.pop(path, None)
            store = self.store
            if store is None:  # forgotten when the store is opened
                self._gone.update(gone)
                return
        try:
            store.remove(gone)
        except Exception:  # the index is a cache: a failure costs at most a stale neighbour
            log.exception("the meaning index could not forget %d notes", len(gone))

    def wait(self, timeout: float, *, all_notes: bool = True) -> bool:
        """Wait until search answers by meaning and (``all_notes``) every note in line is embedded; False if
        ``timeout`` seconds pass first."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not self.ready or (all_notes and (self._line or self._working)):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def query(self, text: str) -> np.ndarray | None:
        """The vector of a search query, or None while search by meaning is not ready."""
        if not self.ready:
            return None
        return self._embedder.embed([text])[0]

    def nearest(self, vector: np.ndarray, limit: int, *, exclude: str | None = None) -> list[Neighbour]:
        """The notes closest to ``vector``, best first (none while the vectors are not open)."""
        return [] if self.store is None else self.store.nearest(vector, limit, exclude=exclude)

    def scores_of(self, vector: np.ndarray, paths: Iterable[str]) -> dict[str, Neighbour]:
        """The best chunk of each of ``paths`` that has vectors, against ``vector``."""
        return {} if self.store is None else self.store.scores_of(vector, paths)

    def embed_now(self, rel: str, timeout: float = 30.0) -> np.ndarray | None:
        """Embed the note at ``rel`` in this thread unless its current bytes already are; its vector (None if
        the vectors file is not open within ``timeout`` seconds)."""
        with self._changed:
            self._changed.wait_for(lambda: self.store is not None or self._stop, timeout)
            store = self.store
        if store is None:
            return None
        try:
            data = (self._root / rel).read_bytes()
        except OSError:
            return None
        if store.known().get(rel) != hashlib.sha256(data).hexdigest():
            self._embed([(rel, data)])
        return store.vector_of(rel)

    def _run(self) -> None:
        try:
            self._open()
        except Exception:
            log.exception("the meaning index could not be opened; search answers by words only")
            return
        try:
            self._embedder_load()
        except Exception:
            log.exception("the embedding model could not be loaded; search answers by words only")
            return
        helpers = [
            threading.Thread(target=self._work, name=f"vault-recall-{number}", daemon=True)
            for number in range(1, EMBEDDING_THREADS)
        ]
        with self._changed:
            self._helpers = helpers
        for helper in helpers:
            helper.start()
        self._work()

    def _work(self) -> None:
        """Embed batches from the line until stopped (several threads may: a note is in one batch at a time)."""
        while True:
            with self._changed:
                while not self._stop and not (batch := self._take()):
                    if not self._built and not self._working:
                        self._built = True
                        log.info("meaning index: built, %d notes", len(self.store or ()))
                    self._changed.notify_all()
                    self._changed.wait()
                if self._stop:
                    return
                self._working += len(batch)
                self._busy.update(batch)
            try:
                self._embed([(path, data) for path in batch if (data := self._read(path)) is not None])
            finally:
                with self._changed:
                    self._working -= len(batch)
                    self._busy.difference_update(batch)
                    self._changed.notify_all()

    def _take(self) -> list[str]:
        """Up to a batch of notes from the line, leaving those another thread is embedding (called locked)."""
        batch = [path for path in self._line if path not in self._busy][:_BATCH]
        for path in batch:
            del self._line[path]
        return batch

    def _open(self) -> None:
        """Open the vectors, queue the notes whose vectors are missing or stale and forget the notes gone."""
        store = VectorStore(self._path, model=self._embedder.name, dim=self._embedder.dim)
        embedded = store.known()
        with self._changed:
            gone = self._gone | {path for path in embedded if path not in self._known}
            self._gone = set()
            stale = [path for path, (_size, _mtime, sha) in self._known.items() if embedded.get(path) != sha]
            for path in stale:
                self._line.setdefault(path, None)
            self.store = store
            self._changed.notify_all()
        log.info("meaning index: %d notes embedded, %d to embed", len(embedded), len(stale))
        self.removed(gone)

    def _embedder_load(self) -> None:
        load = getattr(self._embedder, "load", None)
        if load is not None:
            load()
        with self._changed:
            self._loaded = True
            self._changed.notify_all()

    def _read(self, rel: str) -> bytes | None:
        try:
            return (self._root / rel).read_bytes()
        except FileNotFoundError:
            self.removed([rel])
        except OSError as exc:
            log.warning("meaning index: %s could not be read (%s); it is found by its words only", rel, exc)
        return None

    def _embed(self, notes: list[tuple[str, bytes]]) -> None:
        """Embed ``notes`` in one model call and store each one's vectors."""
        store = self.store
        if not notes or store is None:
            return
        cut = [(rel, chunk(rel, data)) for rel, data in notes]
        texts = [text for _, chunked in cut for text in chunked.texts]
        try:
            vectors = self._embedder.embed(texts)
        except Exception:  # one odd text must not stop the thread; the notes stay findable by words
            log.exception("meaning index: %d notes could not be embedded", len(cut))
            return
        at = 0
        for rel, chunked in cut:
            count = len(chunked.texts)
            try:
                store.put(rel, chunked.sha256, chunked.starts, vectors[at : at + count])
            except Exception:
                log.exception("meaning index: the vectors of %s could not be stored", rel)
            at += count
