"""A second vector for English notes, by the multilingual model, kept as sign bits: how a question in another
language reaches an English note.

The English model knows English only, so a German question finds an English note by its words or not at
all; the multilingual model places a sentence and its translation close together (docs/search.md: 6 of 12
German, French and Spanish questions' English pages by meaning alone, against 2 for the English model). Its
512-number rows as int8 would add 81 MB at 100,000 English notes, over the memory budget. In memory each
chunk keeps 256 sign bits (32 bytes, :func:`signs`), in the row the English model's vectors of the same chunk
hold in their store, so the notes' paths and rows are not kept twice (a store of its own took 32 MB at 100,000
notes, these bits 5 MB). A question's nearest rows by the bits they share (XOR and popcount over every row)
are scored again exactly from the int8 rows in the file: search ranks with the cosine similarity, as for
every other vector.

The bits are read from the file when the first question that needs them comes (one that does not read as
English), not when the vault opens: a person whose questions all read as English never holds them (6.5 MB
at 100,000 notes). Until then a note's new vectors go to the file only, and that first read finds them there.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from vault.vectors import Neighbour, VectorStore, quantise

log = logging.getLogger(__name__)


def signs(rows: np.ndarray) -> np.ndarray:
    """Half as many sign bits as ``rows`` have numbers, packed: the sign of each number plus the one half a row
    further on (a hyperplane through both, so every number counts; 32 bytes a 512-number row, where a bit for
    each number took twice that, 10 MB at 100,000 notes)."""
    half = rows.shape[1] // 2
    return np.packbits(rows[:, :half].astype(np.int16) + rows[:, half:] > 0, axis=1)

# Rows drawn by their bits before scoring their notes exactly: 200 indexed reads cost a few milliseconds.
_DRAWN = 200


class SignStore(VectorStore):
    """The multilingual model's chunk vectors of English notes: int8 in the file, sign bits in memory beside the
    English model's rows of the same chunks (``rows_of``). Thread-safe."""

    def __init__(self, path: Path, *, model: str, dim: int, rows_of: VectorStore) -> None:
        self._rows_of = rows_of
        self._bits = np.zeros((0, dim // 16), dtype=np.uint8)
        # The note each row of bits was set for, to tell them from a row the English store gave another note.
        self._holders: list[str | None] = []
        self._held = 0  # rows whose bits were set for a note
        self._read = False  # the bits are read on the first question that needs them
        super().__init__(path, model=model, dim=dim)

    def _fill(self) -> None:
        """Nothing at open: :meth:`_read_bits` reads the bits when a question first needs them."""

    def _read_bits(self) -> None:
        """Every row's bits from the file, once (called locked)."""
        if self._read:
            return
        self._read = True
        try:
            self._fill_bits()
        except sqlite3.DatabaseError:  # a cache: the notes are still found by their English vectors and words
            log.exception("the second vectors in %s could not be read", self._path)

    def _fill_bits(self) -> None:
        cursor = self._conn.execute("SELECT path, seq, vector FROM chunks WHERE seq >= 0 ORDER BY path, seq")
        while batch := cursor.fetchmany(1024):
            # Each row's place: the English store's row of the same chunk of the same note.
            placed = [
                (slot, row[2])
                for row in batch
                if len(row[2]) == self._dim and (slot := self._english_slot(row[0], row[1])) is not None
            ]
            if not placed:
                continue
            slots = [slot for slot, _ in placed]
            rows = np.frombuffer(b"".join(vector for _, vector in placed), dtype=np.int8).reshape(len(placed), -1)
            self._grow()
            self._bits[slots] = signs(rows)
            for slot, holder in zip(slots, self._rows_of.owners(slots), strict=True):
                self._held += self._holders[slot] is None
                self._holders[slot] = holder

    def _english_slot(self, path: str, seq: int) -> int | None:
        """The English store's row of chunk ``seq`` of ``path``, if it has one."""
        slots = self._rows_of.slots_of(path)
        return slots[seq] if seq < len(slots) else None

    def _grow(self) -> None:
        """Room for a row of bits beside each of the English store's rows."""
        if (needed := self._rows_of.rows) > len(self._bits):
            grown = max(needed, len(self._bits) + len(self._bits) // 2)
            # Not np.concatenate: its temporary array of zeros, freed at once, raised glibc's mmap threshold to
            # its size (10 MB at 100,000 notes), and the start's large dicts then stayed in the heap when freed.
            bits = np.zeros((grown, self._bits.shape[1]), dtype=np.uint8)
            bits[: len(self._bits)] = self._bits
            self._bits = bits
            self._holders += [None] * (grown - len(self._holders))

    def _keep(self, path: str, rows: np.ndarray, scales: np.ndarray, starts: list[int]) -> None:
        slots = self._rows_of.slots_of(path)
        # Before the bits are read the file is enough; English vectors of another version: the last line comes again.
        if not self._read or len(slots) != len(rows):
            return
        self._grow()
        self._bits[slots] = signs(rows)
        # The English store's own string for the path: one read from this file would be a second copy of every
        # path (and keep the heap that reading the file used: 38 MB at 100,000 notes where the bits take 10).
        holder = self._rows_of.owners(slots[:1])[0]
        for slot in slots:
            self._held += self._holders[slot] is None
            self._holders[slot] = holder

    def _forget(self, path: str) -> None:
        if not self._read:
            return
        for slot in self._rows_of.slots_of(path):
            if slot < len(self._holders) and self._holders[slot] == path:
                self._holders[slot] = None
                self._held -= 1

    def behind(self, english: Path) -> set[str]:
        """The notes with vectors in the English model's file ``english`` whose second vectors here are missing
        or of another version; the rows of notes it holds no vectors for are dropped. Asked of the two files in
        SQLite: a dict of every note's hash, as the other stores are asked, was 25 MB at 100,000 notes, and
        the heap it took stayed with the process."""
        with self._lock:
            self._conn.execute("ATTACH DATABASE ? AS english", (str(english),))
            try:
                self._conn.execute(
                    "DELETE FROM chunks WHERE NOT EXISTS "
                    "(SELECT 1 FROM english.chunks e WHERE e.path = chunks.path AND e.seq = 0)"
                )
                return {
                    path
                    for (path,) in self._conn.execute(
                        "SELECT e.path FROM english.chunks e WHERE e.seq = 0 AND NOT EXISTS (SELECT 1 FROM chunks a "
                        "WHERE a.path = e.path AND a.seq = 0 AND a.sha256 = e.sha256)"
                    )
                }
            finally:
                self._conn.execute("DETACH DATABASE english")

    def nearest(self, query: np.ndarray, limit: int, *, exclude: str | None = None) -> list[Neighbour]:
        """The ``limit`` notes whose best chunk is closest to the normalised vector ``query``, best first."""
        with self._lock:
            self._read_bits()
            if not self._held:
                return []
            bits = signs(quantise(query[None, :])[0]).view(np.uint64)
            apart = np.bitwise_count(self._bits.view(np.uint64) ^ bits).sum(axis=1, dtype=np.int32)
            take = min(len(apart), max(limit * 8, 2 * _DRAWN))
            drawn = np.argpartition(apart, take - 1)[:take]
            drawn = drawn[np.argsort(apart[drawn], kind="stable")]
            owners = self._rows_of.owners(drawn)
            chosen: dict[str, None] = {}
            for slot, owner in zip(drawn, owners, strict=True):
                # A row whose English vectors are now another note's (or none) is left out.
                if owner is not None and owner != exclude and self._holders[slot] == owner:
                    chosen.setdefault(owner, None)
                    if len(chosen) == _DRAWN:
                        break
            found = [n for path in chosen if (n := self._exact(query, path)) is not None]
        found.sort(key=lambda n: -n.score)
        return found[:limit]

    def scores_of(self, query: np.ndarray, paths: Iterable[str]) -> dict[str, Neighbour]:
        """The best chunk of each of ``paths`` that has vectors, against the normalised vector ``query``."""
        with self._lock:
            return {path: n for path in paths if (n := self._exact(query, path)) is not None}

    def vector_of(self, path: str) -> np.ndarray | None:
        """Not kept in memory here; a note's own vector comes from the store of its own model."""
        return None

    def __len__(self) -> int:
        """The chunks with second vectors: the rows of bits held once read (a row the English store has since
        given another note counts until its bits are set again), the file's rows before. 0 when no English note
        has its second vectors."""
        with self._lock:
            if self._read:
                return self._held
            return self._conn.execute("SELECT count(*) FROM chunks WHERE seq >= 0").fetchone()[0]

    @property
    def empty(self) -> bool:
        """True when no English note has second vectors: asked of every question, so the file is asked whether
        it has one row, not how many (or the bits read)."""
        with self._lock:
            if self._read:
                return not self._held
            return self._conn.execute("SELECT 1 FROM chunks WHERE seq >= 0 LIMIT 1").fetchone() is None

    def _exact(self, query: np.ndarray, path: str) -> Neighbour | None:
        """``path``'s best chunk against ``query`` from its int8 rows in the file (called locked)."""
        rows = self._conn.execute(
            "SELECT start, scale, vector FROM chunks WHERE path = ? AND seq >= 0 AND length(vector) = ?",
            (path, self._dim),
        ).fetchall()
        if not rows:
            return None
        matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype=np.int8).reshape(len(rows), self._dim)
        scores = (matrix.astype(np.float32) @ query) * np.array([row[1] for row in rows], dtype=np.float32)
        best = int(np.argmax(scores))
        return Neighbour(path, float(scores[best]), int(rows[best][0]))
