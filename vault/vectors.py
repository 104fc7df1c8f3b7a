"""The meaning index: each note's chunk vectors, kept in a SQLite file and searched in memory with numpy.

Like the keyword index it is a cache of the notes: it can be deleted at any time, and a damaged file is
set aside and rebuilt. Vectors are stored as int8 with a scale per row (512 bytes a chunk instead of 2 KB),
which keeps 100,000 notes (159,000 chunks) in ~80 MB of memory; a query is one int8 dot product over all rows (numpy's
einsum, accumulating in int32), exact search with no approximate structure to build or keep in step.
sqlite-vec would search inside SQLite, but Python's own sqlite3 here cannot load extensions.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vault.files import create_private_file

log = logging.getLogger(__name__)

# Bumped whenever the schema changes: an old file is dropped and rebuilt from the notes.
VECTORS_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    path   TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    start  INTEGER NOT NULL,
    scale  REAL NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (path, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""
_BROKEN = {sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT}
# The ``seq`` of the one row of a note passed on to another model: no vector, only its hash.
PASSED = -1


@dataclass(frozen=True)
class Neighbour:
    """A note close in meaning: its best chunk's cosine similarity and where that chunk starts in the text."""

    path: str
    score: float
    start: int


def quantise(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows and the scale that turns each back into (nearly) the float row."""
    peaks = np.abs(vectors).max(axis=1)
    scales = np.where(peaks == 0, 1.0, peaks / 127.0).astype(np.float32)
    rows = np.clip(np.rint(vectors / scales[:, None]), -127, 127).astype(np.int8)
    return rows, scales


class VectorStore:
    """Chunk vectors by note path, in one SQLite file and in memory. Thread-safe."""

    def __init__(self, path: Path, *, model: str, dim: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._path, self._model, self._dim = path, model, dim
        self._lock = threading.Lock()
        self._conn = self._open_or_rebuild()
        self._matrix = np.zeros((0, dim), dtype=np.int8)
        self._scales = np.zeros(0, dtype=np.float32)
        self._starts = np.zeros(0, dtype=np.int64)
        self._owners: list[str | None] = []  # the note of each row; None for a free row
        self._free: list[int] = []
        self._rows: dict[str, list[int] | range] = {}
        self._load()

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._conn.close()

    # --- the file ----------------------------------------------------------------------

    def _open_or_rebuild(self) -> sqlite3.Connection:
        try:
            return self._open()
        except sqlite3.DatabaseError as exc:
            if exc.sqlite_errorcode & 0xFF not in _BROKEN:
                raise
            self._set_aside(exc)
            return self._open()

    def _set_aside(self, exc: Exception) -> None:
        aside = self._path.with_name(f"{self._path.name}.broken")
        log.warning("The meaning index %s is damaged (%s); it is moved to %s and rebuilt.", self._path, exc, aside.name)
        os.replace(self._path, aside)
        for suffix in ("-wal", "-shm"):
            self._path.with_name(self._path.name + suffix).unlink(missing_ok=True)

    def _open(self) -> sqlite3.Connection:
        create_private_file(self._path)
        conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=5000")
            fresh = conn.execute("PRAGMA user_version").fetchone()[0] != VECTORS_VERSION
            if not fresh:
                conn.executescript(_SCHEMA)
                row = conn.execute("SELECT value FROM meta WHERE key = 'model'").fetchone()
                fresh = row is None or row[0] != self._model
            if fresh:  # another version or another model: these vectors cannot be compared with new ones
                conn.executescript("DROP TABLE IF EXISTS chunks; DROP TABLE IF EXISTS meta;")
                conn.executescript(_SCHEMA)
                conn.execute("INSERT INTO meta (key, value) VALUES ('model', ?)", (self._model,))
                conn.execute(f"PRAGMA user_version={VECTORS_VERSION}")
        except BaseException:
            conn.close()
            raise
        return conn

    def _load(self) -> None:
        try:
            self._fill()
        except sqlite3.DatabaseError as exc:
            if exc.sqlite_errorcode & 0xFF not in _BROKEN:
                raise
            self._conn.close()
            self._set_aside(exc)
            self._conn = self._open()
            self._fill()

    def _fill(self) -> None:
        """Read every row straight into the arrays: holding all rows as Python objects first took twice the
        matrix's memory at 100,000 notes, and the allocator kept most of it after they were freed."""
        capacity = self._conn.execute("SELECT count(*) FROM chunks WHERE seq >= 0").fetchone()[0]
        self._matrix = np.zeros((capacity, self._dim), dtype=np.int8)
        self._scales = np.zeros(capacity, dtype=np.float32)
        self._starts = np.zeros(capacity, dtype=np.int64)
        self._owners, self._rows = [], {}
        cursor = self._conn.execute("SELECT path, start, scale, vector FROM chunks WHERE seq >= 0 ORDER BY path, seq")
        owner: str | None = None
        first = 0
        while batch := cursor.fetchmany(1024):
            whole = [row for row in batch if len(row[3]) == self._dim]  # a damaged row is left out
            at = len(self._owners)
            rows = np.frombuffer(b"".join(row[3] for row in whole), dtype=np.int8).reshape(len(whole), self._dim)
            self._matrix[at : at + len(whole)] = rows
            self._scales[at : at + len(whole)] = [row[2] for row in whole]
            self._starts[at : at + len(whole)] = [row[1] for row in whole]
            for index, (path, *_) in enumerate(whole, start=at):
                if path != owner:  # rows come by path: one string per note, not one per chunk
                    owner, first = path, index
                # A note's rows are consecutive here: a range costs 48 bytes, a list of ints ~110 at 1.6 rows.
                self._rows[owner] = range(first, index + 1)
                self._owners.append(owner)

    # --- changes -----------------------------------------------------------------------

    def pass_on(self, path: str, sha256: str) -> None:
        """Record that the note at ``path``, as it is now, is embedded by another model: it has no vectors
        here, and the content hash tells a later start that nothing is left to do for it."""
        self.put(path, sha256, [], np.zeros((0, self._dim), dtype=np.float32))

    def sha_of(self, path: str) -> str | None:
        """The content hash the note at ``path`` had when it was embedded or passed on; None if unknown. Read
        from the file: held in memory for every note, the hashes cost ~16 MB at 100,000 notes."""
        with self._lock:
            row = self._conn.execute("SELECT sha256 FROM chunks WHERE path = ? LIMIT 1", (path,)).fetchone()
        return row[0] if row else None

    def has_vectors(self, path: str) -> bool:
        """Whether the note at ``path`` has vectors here (not passed on)."""
        with self._lock:
            return path in self._rows

    def with_vectors(self) -> set[str]:
        """The notes that have vectors here (not passed on)."""
        with self._lock:
            return set(self._rows)

    def known(self) -> dict[str, str]:
        """The content hash each note had when it was embedded or passed on, by path (read from the file)."""
        with self._lock:
            return dict(self._conn.execute("SELECT path, sha256 FROM chunks WHERE seq <= 0"))

    def put(self, path: str, sha256: str, starts: list[int], vectors: np.ndarray) -> None:
        """Keep ``vectors`` (one per chunk, starting at ``starts`` in the note's text) as ``path``'s. No vectors
        at all (:meth:`pass_on`) records that this version of the note is another model's to embed."""
        rows, scales = quantise(vectors) if len(vectors) else (np.zeros((0, self._dim), np.int8), np.zeros(0))
        records = [
            (path, seq, sha256, start, float(scale), row.tobytes())
            for seq, (start, scale, row) in enumerate(zip(starts, scales, rows, strict=True))
        ] or [(path, PASSED, sha256, 0, 0.0, b"")]
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute("DELETE FROM chunks WHERE path = ?", (path,))
                self._conn.executemany(
                    "INSERT INTO chunks (path, seq, sha256, start, scale, vector) VALUES (?, ?, ?, ?, ?, ?)", records
                )
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._keep(path, rows, scales, starts)

    def _keep(self, path: str, rows: np.ndarray, scales: np.ndarray, starts: list[int]) -> None:
        """Hold ``path``'s new rows in memory in place of its old ones (called locked)."""
        self._forget(path)
        slots = [self._slot() for _ in range(len(rows))]
        self._matrix[slots] = rows
        self._scales[slots] = scales
        self._starts[slots] = starts
        for slot in slots:
            self._owners[slot] = path
        if slots:
            self._rows[path] = slots

    def remove(self, paths: Iterable[str]) -> None:
        """Forget the notes at ``paths``."""
        with self._lock:
            gone = list(paths)
            if not gone:
                return
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany("DELETE FROM chunks WHERE path = ?", [(path,) for path in gone])
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            for path in gone:
                self._forget(path)

    def _forget(self, path: str) -> None:
        for slot in self._rows.pop(path, []):
            self._scales[slot] = 0.0  # a free row scores 0 until it is reused
            self._owners[slot] = None
            self._free.append(slot)

    def _slot(self) -> int:
        if self._free:
            return self._free.pop()
        used = len(self._owners)
        if used == len(self._matrix):
            grown = max(64, used + used // 2)
            self._matrix = np.concatenate([self._matrix, np.zeros((grown - used, self._dim), dtype=np.int8)])
            self._scales = np.concatenate([self._scales, np.zeros(grown - used, dtype=np.float32)])
            self._starts = np.concatenate([self._starts, np.zeros(grown - used, dtype=np.int64)])
        self._owners.append(None)
        return used

    # --- questions ---------------------------------------------------------------------

    def nearest(self, query: np.ndarray, limit: int, *, exclude: str | None = None) -> list[Neighbour]:
        """The ``limit`` notes whose best chunk is closest to the normalised vector ``query``, best first."""
        with self._lock:
            scores = self._scores(query)
            owners = self._owners
            if not len(scores):
                return []
            # Enough chunks to find ``limit`` distinct notes unless a few notes own most of the best chunks.
            take = min(len(scores), max(limit * 8, 64))
            best = np.argpartition(-scores, take - 1)[:take]
            best = best[np.argsort(-scores[best], kind="stable")]
            found: dict[str, Neighbour] = {}
            for slot in best:
                owner = owners[slot]
                if owner is None or owner == exclude or owner in found:
                    continue
                found[owner] = Neighbour(owner, float(scores[slot]), int(self._starts[slot]))
                if len(found) == limit:
                    break
            return list(found.values())

    def scores_of(self, query: np.ndarray, paths: Iterable[str]) -> dict[str, Neighbour]:
        """The best chunk of each of ``paths`` that has vectors, against the normalised vector ``query``."""
        with self._lock:
            out: dict[str, Neighbour] = {}
            q_rows, q_scale = quantise(query[None, :])
            for path in paths:
                slots = self._rows.get(path)
                if not slots:
                    continue
                dots = self._matrix[slots].astype(np.int32) @ q_rows[0].astype(np.int32)
                scores = dots * self._scales[slots] * q_scale[0]
                best = int(np.argmax(scores))
                out[path] = Neighbour(path, float(scores[best]), int(self._starts[slots[best]]))
            return out

    def slots_of(self, path: str) -> list[int]:
        """The rows of ``path``'s chunks in memory, in the order of its chunks."""
        with self._lock:
            return list(self._rows.get(path, ()))

    def owners(self, slots: Iterable[int]) -> list[str | None]:
        """The note of each of ``slots`` (None for a free row)."""
        with self._lock:
            return [self._owners[slot] if slot < len(self._owners) else None for slot in slots]

    @property
    def rows(self) -> int:
        """The rows in memory, used and free."""
        with self._lock:
            return len(self._owners)

    def vector_of(self, path: str) -> np.ndarray | None:
        """The mean of ``path``'s chunk vectors, normalised (what the note is about as a whole)."""
        with self._lock:
            slots = self._rows.get(path)
            if not slots:
                return None
            mean = (self._matrix[slots].astype(np.float32) * self._scales[slots, None]).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return mean / norm if norm else None

    def _scores(self, query: np.ndarray) -> np.ndarray:
        used = len(self._owners)
        q_rows, q_scale = quantise(query[None, :])
        # einsum keeps int8 × int8 in an int32 accumulator with SIMD: ~4x faster here than a float32 matmul
        # over the same rows, and a quarter of the memory.
        dots = np.einsum("ij,j->i", self._matrix[:used], q_rows[0], dtype=np.int32)
        return dots * self._scales[:used] * q_scale[0]

    def __len__(self) -> int:
        """The notes with vectors here."""
        with self._lock:
            return len(self._rows)
