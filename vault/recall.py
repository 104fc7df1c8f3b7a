"""Keeping the meaning index in step with the notes: chunking, and a background thread that embeds.

The keyword index (``vault.catalog``) notices every change, vaultbot's own writes and edits made on disk;
it tells :class:`Recall` which notes changed and which are gone. Changed notes wait in line for the
embedding thread, which reads each from disk, cuts it into chunks, embeds them and stores the vectors
with the hash of the bytes it read. On start, notes whose hash matches their vectors are left alone,
so an unchanged vault re-embeds nothing, and a missing or damaged vector file is simply rebuilt.

Opening the vectors file and loading the model happen in that thread too, so opening a vault waits for
neither. As soon as both are done (:attr:`Recall.ready`, about a second), search answers by meaning with
every note embedded so far, and by words alone for the rest; before that, by words alone.

With a second, English model, each note is embedded by one of the two, chosen by the note's language
(``vault.languages``): English notes by the English model, every other note by the multilingual one. Each
model keeps its own vectors file, and a note embedded by one is recorded in the other's as passed on, with
its content hash, so a later start has nothing to do for it. A vault indexed before the English model came
keeps its multilingual vectors and answers with them at once; its notes go through a second, slower line
after every new or changed note: an English note is embedded again by the English model, any other is only
marked passed on (read, not embedded again). A question is embedded by each model that has notes, and the
two models' nearest notes are ranked together by their cosine similarities as they are (docs/search.md
measured scaling one model's: it would be tuning on the test questions), less 0.1 for the multilingual
model's notes when the question reads as English (``OTHER_LANGUAGE``). A note too short to tell by its common
words goes to the English model when its words and title read as English (``vault.languages``).

The English model knows English only, so an English note also gets the multilingual model's vectors, kept as
sign bits (``vault.signs``), in a last line that waits until every note has its first vectors: a first build
is not slowed by them. They answer questions that do not read as English.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from vault import frontmatter, meta
from vault.embedder import Embedder
from vault.languages import english_words, reads_as_english
from vault.offline import no_telemetry
from vault.paths import NOTE_SUFFIX
from vault.signs import SignStore
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


# The vectors file of the second (English) model, beside the first one's.
ENGLISH_VECTORS = "vectors-en.db"
# The first (multilingual) model's vectors of the English notes, for questions in other languages.
ACROSS_VECTORS = "vectors-across.db"


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


# glibc's mallopt parameter for the size from which a block is mapped on its own, and unmapped when freed.
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD = 128 * 1024  # glibc's own first value


def _map_large_blocks_apart() -> None:
    """Keep glibc mapping every block of 128 KB or more on its own, so that freeing it gives it back. By default
    the first such block freed raises that size to its own (up to 32 MB): a search's temporaries over 100,000
    rows (the scores, the bits' XOR, 1-5 MB each) then come from the heap, and so did the start's, and glibc
    kept them there once freed (21 MB at 100,000 notes). Elsewhere than glibc, nothing to do."""
    try:
        ctypes.CDLL("libc.so.6").mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)
    except (OSError, AttributeError):
        pass


def _give_back_memory() -> None:
    """Hand the heap that opening the vectors used for a moment (every note's hash, twice) back to the system:
    glibc keeps it otherwise, 16 MB at 100,000 notes. Elsewhere than glibc, nothing to do."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


@dataclass
class _Space:
    """One model and its vectors file."""

    embedder: Embedder
    path: Path
    store: VectorStore | None = None  # opened by the thread: None until then
    loaded: bool = False


# Taken from the similarity of a note in another language than an English question's: the multilingual model
# puts a page and its translations about as close to the question, and they would crowd the page itself out
# of the first five (docs/search.md). The same margin as related notes give a note in the note's language.
OTHER_LANGUAGE = 0.1


@dataclass(frozen=True)
class Probe:
    """A question or a note as each model that can answer sees it: a vector for each space, by its number, and
    what is taken from the similarities found in a space (an English question's in the multilingual one)."""

    vectors: dict[int, np.ndarray]
    handicaps: dict[int, float] = field(default_factory=dict)
    across: np.ndarray | None = None  # the first model's vector, for the English notes' second vectors

    def handicapped(self, number: int, found: list[Neighbour]) -> list[Neighbour]:
        """``found`` in space ``number``, each similarity less that space's handicap."""
        taken = self.handicaps.get(number, 0.0)
        return [replace(n, score=n.score - taken) for n in found] if taken else found


class Recall:
    """Vectors for every note of one vault root, kept current by a background thread. Thread-safe."""

    def __init__(self, root: Path, path: Path, embedder: Embedder, english: Embedder | None = None) -> None:
        no_telemetry()  # here, before any thread: a model loaded for the vault reaches no one
        self._root = root
        self._spaces = [_Space(embedder, path)]
        if english is not None:
            self._spaces.append(_Space(english, path.with_name(ENGLISH_VECTORS)))
        self._across_path = path.with_name(ACROSS_VECTORS) if english is not None else None
        self._across: SignStore | None = None  # opened by the thread, with the English model's file
        self._known: dict[str, tuple[int, int, str]] = {}
        self._gone: set[str] = set()  # notes deleted before the stores were opened
        self._line: dict[str, None] = {}  # notes waiting to be embedded, the most recently changed first
        self._later: dict[str, None] = {}  # notes embedded by the first model, for the second to look at
        self._third: dict[str, None] = {}  # English notes waiting for the first model's vector, after the rest
        self._changed = threading.Condition()
        self._working = 0  # notes taken from the lines and not yet stored
        self._firsts = 0  # of them, batches of notes' first vectors (the last line waits for none left)
        self._busy: set[str] = set()  # the notes being embedded now, by any thread
        self._helpers: list[threading.Thread] = []
        self._stop = False
        self._built = False
        self._opened = False
        self._settled = False  # every model loaded, or dropped for failing to load
        self._loading = False  # the thread is opening the vectors or loading a model (close() does not wait)
        self._thread: threading.Thread | None = None

    def start(self, known: dict[str, tuple[int, int, str]]) -> None:
        """Start the thread: it opens the vectors, queues every note of the keyword index (``known``) whose
        vectors are missing or stale, forgets the rest, loads the models and embeds in the background."""
        self._known = known
        self._loading = True
        _map_large_blocks_apart()  # before the vectors are read
        self._thread = threading.Thread(target=self._run, name="vault-recall", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the thread (after the batch it is embedding) and close the files. While a model is still loading
        (a second or two, and a command that ends at once never needed it) this returns at once: the thread
        closes the files itself when the load is done, and a process that exits first simply leaves it."""
        with self._changed:
            self._stop = True
            self._changed.notify_all()
            if self._loading:
                return
        if self._thread is not None:
            self._thread.join()
        for helper in self._helpers:
            helper.join()
        self._close_stores()

    def _close_stores(self) -> None:
        for space in self._spaces:
            if space.store is not None:
                space.store.close()
        if self._across is not None:
            self._across.close()

    @property
    def ready(self) -> bool:
        """True once the vectors are open and the first model is loaded: search answers by meaning with what
        is embedded so far, whether or not the rest is (notes of the second model once it is loaded too)."""
        return self._opened and self._spaces[0].loaded

    def embedded(self) -> list[int]:
        """How many notes have vectors of each model, the first model's first."""
        return [len(space.store) if space.store is not None else 0 for space in self._spaces]

    def changed(self, paths: Iterable[str]) -> None:
        """Put notes that were written or edited in line to be embedded."""
        fresh = dict.fromkeys(paths)
        with self._changed:
            for path in fresh:
                self._later.pop(path, None)
                self._third.pop(path, None)
            # Before the notes already waiting: a note just written is the one a person asks about next.
            self._line = {**fresh, **self._line}
            self._changed.notify_all()

    def removed(self, paths: Iterable[str]) -> None:
        """Forget notes deleted or renamed away."""
        gone = list(paths)
        with self._changed:
            for path in gone:
                self._line.pop(path, None)
                self._later.pop(path, None)
                self._third.pop(path, None)
            self._changed.notify_all()  # the lines may be empty now, which wait() waits for
            if not self._opened:  # forgotten when the stores are opened
                self._gone.update(gone)
                return
        stores = [space.store for space in self._spaces] + ([self._across] if self._across is not None else [])
        for store in stores:
            try:
                store.remove(gone)  # type: ignore[union-attr]  # opened, never closed before the thread
            except Exception:  # the index is a cache: a failure costs at most a stale neighbour
                log.exception("the meaning index could not forget %d notes", len(gone))

    def wait(self, timeout: float, *, all_notes: bool = True) -> bool:
        """Wait until search answers by meaning and (``all_notes``) every model is loaded and every note in line
        is embedded by the model it belongs to; False if ``timeout`` seconds pass first."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while not self.ready or (
                all_notes and (not self._settled or self._line or self._later or self._third or self._working)
            ):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._changed.wait(left)
        return True

    def query(self, text: str) -> Probe | None:
        """The question as each loaded model with notes sees it (a model without notes is not asked: in a vault
        of English notes the multilingual model has none), or None while search by meaning is not ready. A
        question that does not read as English is also put to the English notes' second vectors (``across``)."""
        if not self.ready:
            return None
        vectors = {
            number: space.embedder.embed([text])[0]
            for number, space in enumerate(self._spaces)
            if space.loaded and space.store is not None and len(space.store)
        }
        across = self._across is not None and len(self._spaces) > 1 and not self._across.empty
        if (len(vectors) > 1 or across) and reads_as_english(text, english_words):
            return Probe(vectors, {0: OTHER_LANGUAGE} if len(vectors) > 1 else {})
        if not across:
            return Probe(vectors)
        first = vectors[0] if 0 in vectors else self._spaces[0].embedder.embed([text])[0]
        return Probe(vectors, across=first)

    @property
    def loaded(self) -> bool:
        """True once every model is loaded."""
        return all(space.loaded for space in self._spaces)

    def nearest(self, probe: Probe, limit: int, *, exclude: str | None = None) -> list[Neighbour]:
        """The notes closest to ``probe``, best first, whichever model holds them."""
        found: list[Neighbour] = []
        for number, vector in probe.vectors.items():
            store = self._spaces[number].store
            if store is not None:
                found += probe.handicapped(number, store.nearest(vector, limit, exclude=exclude))
        if probe.across is not None and self._across is not None:
            found += self._across.nearest(probe.across, limit, exclude=exclude)
        found.sort(key=lambda n: -n.score)
        best: dict[str, Neighbour] = {}
        for neighbour in found:  # an English note may be found by both its vectors: once, at its best
            best.setdefault(neighbour.path, neighbour)
        return list(best.values())[:limit]

    def scores_of(self, probe: Probe, paths: Iterable[str]) -> dict[str, Neighbour]:
        """The best chunk of each of ``paths`` that has vectors, against ``probe``."""
        wanted = list(paths)
        out: dict[str, Neighbour] = {}
        found: list[Neighbour] = []
        for number, vector in probe.vectors.items():
            store = self._spaces[number].store
            if store is not None:
                found += probe.handicapped(number, list(store.scores_of(vector, wanted).values()))
        if probe.across is not None and self._across is not None:
            found += self._across.scores_of(probe.across, wanted).values()
        for neighbour in found:
            if neighbour.path not in out or neighbour.score > out[neighbour.path].score:
                out[neighbour.path] = neighbour
        return out

    def embed_now(self, rel: str, timeout: float = 30.0) -> Probe | None:
        """Embed the note at ``rel`` in this thread unless its current bytes already are; the note as its own
        model sees it (None if the vectors are not open within ``timeout`` seconds)."""
        with self._changed:
            self._changed.wait_for(lambda: self._opened or self._stop, timeout)
            if not self._opened:
                return None
        try:
            data = (self._root / rel).read_bytes()
        except OSError:
            return None
        sha = hashlib.sha256(data).hexdigest()
        if any(space.store.sha_of(rel) != sha for space in self._spaces):  # type: ignore[union-attr]
            self._embed([(rel, data)])
        for number, space in enumerate(self._spaces):
            vector = space.store.vector_of(rel)  # type: ignore[union-attr]
            if vector is not None:
                return Probe({number: vector})
        return None

    def _run(self) -> None:
        try:
            usable = self._open_and_load()
        finally:
            with self._changed:
                self._loading = False
                abandoned = self._stop  # close() came while loading and left the files to this thread
        if abandoned:
            self._close_stores()
            return
        if not usable:
            return
        helpers = [
            threading.Thread(target=self._work, name=f"vault-recall-{number}", daemon=True)
            for number in range(1, EMBEDDING_THREADS)
        ]
        with self._changed:
            self._helpers = helpers
            self._settled = True
            self._changed.notify_all()
        for helper in helpers:
            helper.start()
        self._work()

    def _open_and_load(self) -> bool:
        """Open the vectors and load the models; False when search by meaning cannot work (or was closed)."""
        try:
            self._open()
        except Exception:
            log.exception("the meaning index could not be opened; search answers by words only")
            return False
        for space in self._spaces:
            if self._stop:
                return False
            try:
                load = getattr(space.embedder, "load", None)
                if load is not None:
                    load()
            except Exception:
                log.exception("the embedding model %s could not be loaded", space.embedder.name)
                if space is self._spaces[0]:
                    return False
                self._without(space)
                break
            with self._changed:
                space.loaded = True
                self._changed.notify_all()
        return True

    def _without(self, space: _Space) -> None:
        """Go on without ``space``'s model: its notes are embedded by the first model (words find them
        meanwhile), and so is every note from now on."""
        with self._changed:
            self._spaces.remove(space)
            orphans = space.store.with_vectors() if space.store is not None else set()
            for path in orphans:
                self._later.pop(path, None)
                self._line.setdefault(path, None)
            self._changed.notify_all()
        if space.store is not None:
            space.store.close()
        log.warning("meaning index: %d notes of %s are embedded by the first model", len(orphans), space.embedder.name)

    def _work(self) -> None:
        """Embed batches from the lines until stopped (several threads may: a note is in one batch at a time)."""
        while True:
            with self._changed:
                while not self._stop and not (taken := self._take())[1]:
                    if not self._built and not self._working:
                        self._built = True
                        log.info("meaning index: built, %s notes by model", self.embedded())
                    # No notify here: every change that a waiter waits for notifies where it is made. Two idle
                    # threads that each notified before waiting woke each other for ever (a core's worth of CPU).
                    self._changed.wait()
                if self._stop:
                    return
                first, batch = taken
                self._working += len(batch)
                self._firsts += first
                self._busy.update(batch)
            try:
                notes = [(path, data) for path in batch if (data := self._read(path)) is not None]
                if first:
                    self._embed(notes)
                else:
                    self._embed_across(notes)
            finally:
                with self._changed:
                    self._working -= len(batch)
                    self._firsts -= first
                    self._busy.difference_update(batch)
                    self._changed.notify_all()

    def _take(self) -> tuple[bool, list[str]]:
        """Up to a batch of notes, new and changed ones first, leaving those another thread is embedding
        (called locked); False with the English notes' second vectors, which wait until every note has its first."""
        for line in (self._line, self._later, self._third):
            if line is self._third and self._firsts:
                break  # a note still being embedded for its first time may queue more of the first line
            batch = [path for path in line if path not in self._busy][:_BATCH]
            for path in batch:
                del line[path]
            if batch:
                return line is not self._third, batch
        return True, []

    def _open(self) -> None:
        """Open the vectors, queue the notes whose vectors are missing or stale and forget the notes gone."""
        for space in self._spaces:
            space.store = VectorStore(space.path, model=space.embedder.name, dim=space.embedder.dim)
        english = self._spaces[-1].store
        if self._across_path is not None and english is not None:
            first = self._spaces[0].embedder
            self._across = SignStore(self._across_path, model=first.name, dim=first.dim, rows_of=english)
        known = [space.store.known() for space in self._spaces if space.store is not None]
        behind = self._across.behind(self._spaces[-1].path) if self._across is not None else set()
        with_vectors = [space.store.with_vectors() for space in self._spaces if space.store is not None]
        with self._changed:
            gone = self._gone | {path for embedded in known for path in embedded if path not in self._known}
            self._gone = set()
            for path in self._newest_first():
                sha = self._known[path][2]
                answered = zip(known, with_vectors, strict=True)
                holders = sum(embedded.get(path) == sha and path in vectors for embedded, vectors in answered)
                if not holders:
                    self._line.setdefault(path, None)
                elif holders > 1 or any(embedded.get(path) != sha for embedded in known):
                    # Another model has not seen this version, or two hold it (a model went missing for a
                    # while): the second line settles which one keeps it, embedding only where needed.
                    self._later.setdefault(path, None)
                elif path in behind:
                    self._third.setdefault(path, None)  # an English note without its second vectors
            self._opened = True
            self._known = {}  # the keyword index's snapshot, needed only here (34 MB at 100,000 notes)
            self._changed.notify_all()
        log.info(
            "meaning index: %s notes embedded by model, %d to embed, %d for a second look, %d for a second vector",
            [len(vectors) for vectors in with_vectors],
            len(self._line),
            len(self._later),
            len(self._third),
        )
        self.removed(gone)
        _give_back_memory()

    def _newest_first(self) -> Iterable[str]:
        """The notes of the start's snapshot, the most recently modified first, then the shallowest (a folder's
        own notes before its archive's): the notes a person asks about get their vectors in the first minutes
        of a long first build. Sorted in numpy: a key tuple for each of 100,000 notes left ~20 MB of small
        objects' memory behind."""
        paths = list(self._known)
        mtimes = np.fromiter((stamp[1] for stamp in self._known.values()), dtype=np.int64, count=len(paths))
        depths = np.fromiter((path.count("/") for path in paths), dtype=np.int64, count=len(paths))
        for position in np.lexsort((depths, -mtimes)):
            yield paths[position]

    def _read(self, rel: str) -> bytes | None:
        try:
            return (self._root / rel).read_bytes()
        except FileNotFoundError:
            self.removed([rel])
        except OSError as exc:
            log.warning("meaning index: %s could not be read (%s); it is found by its words only", rel, exc)
        return None

    def _space_of(self, rel: str, data: bytes) -> int:
        """The model a note goes to: the English one for English text, when there is one; else the first. A note
        too short to tell by its common words is told by its words and its title (``reads_as_english``)."""
        if len(self._spaces) < 2:
            return 0
        title = rel.rsplit("/", 1)[-1][: -len(NOTE_SUFFIX)]
        return int(reads_as_english(f"{data[:8192].decode('utf-8', errors='replace')}\n{title}", english_words))

    def _embed(self, notes: list[tuple[str, bytes]]) -> None:
        """Embed ``notes``, each by its model (one call per model), and store each one's vectors with that
        model and a pass in the others'. A note whose model already holds its current version is not
        embedded again."""
        if not notes or not self._opened:
            return
        spaces = self._spaces
        cut: list[list[tuple[str, Chunked]]] = [[] for _ in spaces]
        for rel, data in notes:
            chunked = chunk(rel, data)
            number = self._space_of(rel, data)
            store = spaces[number].store
            if store is not None and store.sha_of(rel) == chunked.sha256 and store.has_vectors(rel):
                self._pass_on(rel, chunked.sha256, number)
                self._second_vector(rel, chunked.sha256, number)
                continue
            cut[number].append((rel, chunked))
        for number, space in enumerate(spaces):
            if not cut[number] or space.store is None:
                continue
            texts = [text for _, chunked in cut[number] for text in chunked.texts]
            try:
                vectors = space.embedder.embed(texts)
            except Exception:  # one odd text must not stop the thread; the notes stay findable by words
                log.exception("meaning index: %d notes could not be embedded", len(cut[number]))
                continue
            at = 0
            for rel, chunked in cut[number]:
                count = len(chunked.texts)
                try:
                    space.store.put(rel, chunked.sha256, chunked.starts, vectors[at : at + count])
                    self._pass_on(rel, chunked.sha256, number)
                    self._second_vector(rel, chunked.sha256, number)
                except Exception:
                    log.exception("meaning index: the vectors of %s could not be stored", rel)
                at += count

    def _second_vector(self, rel: str, sha: str, number: int) -> None:
        """An English note (``number`` 1) without the first model's vector of this version goes in line for it,
        behind every note still without its first; a note of the first model has none."""
        across = self._across
        if across is None or len(self._spaces) < 2:
            return
        if number == 0:
            if across.sha_of(rel) is not None:
                across.remove([rel])
        elif across.sha_of(rel) != sha:
            with self._changed:
                self._third.setdefault(rel, None)
                self._changed.notify_all()

    def _embed_across(self, notes: list[tuple[str, bytes]]) -> None:
        """The first model's vectors of English notes, for questions in other languages: only for a note whose
        English vectors are of the bytes read (one changed since is in line again)."""
        across = self._across
        if across is None or len(self._spaces) < 2 or not notes:
            return
        english = self._spaces[1].store
        if english is None:
            return
        cut = [(rel, chunked) for rel, data in notes if english.sha_of(rel) == (chunked := chunk(rel, data)).sha256]
        if not cut:
            return
        try:
            vectors = self._spaces[0].embedder.embed([text for _, chunked in cut for text in chunked.texts])
        except Exception:  # the note is still found by its English vectors and its words
            log.exception("meaning index: %d notes' second vectors could not be made", len(cut))
            return
        at = 0
        for rel, chunked in cut:
            count = len(chunked.texts)
            try:
                across.put(rel, chunked.sha256, chunked.starts, vectors[at : at + count])
            except Exception:
                log.exception("meaning index: the second vectors of %s could not be stored", rel)
            at += count

    def _pass_on(self, rel: str, sha: str, number: int) -> None:
        """Record in every other model's file that this version of the note is model ``number``'s."""
        for other, space in enumerate(self._spaces):
            store = space.store
            if other != number and store is not None and (store.sha_of(rel) != sha or store.has_vectors(rel)):
                store.pass_on(rel, sha)
