"""A second vector for English notes, by the multilingual model, kept as sign bits: how a question in another
language reaches an English note.

The English model knows English only, so a German question finds an English note by its words or not at
all; the multilingual model places a sentence and its translation close together (docs/search.md: 6 of 12
German, French and Spanish questions' English pages by meaning alone, against 2 for the English model). Its
512-number rows as int8 would add 81 MB at 100,000 English notes, over the memory budget; the sign of each
number is 64 bytes a row (10 MB). A question's nearest rows by the bits they share (one XOR and popcount
over every row) are scored again exactly from the int8 rows in the file, so what search ranks with is the
cosine similarity, as for every other vector.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from vault.vectors import Neighbour, VectorStore, quantise

# Rows drawn by their bits before scoring them exactly: the true nearest 50 notes are nearly always among
# the nearest 200 rows by bits at 512 dimensions, and 200 indexed reads cost a few milliseconds.
_DRAWN = 200


class SignStore(VectorStore):
    """Chunk vectors by note path, as int8 in the file and as sign bits in memory. Thread-safe."""

    def _blank(self, count: int) -> np.ndarray:
        return np.zeros((count, self._dim // 8), dtype=np.uint8)

    def _in_memory(self, rows: np.ndarray) -> np.ndarray:
        return np.packbits(rows > 0, axis=1)

    def nearest(self, query: np.ndarray, limit: int, *, exclude: str | None = None) -> list[Neighbour]:
        """The ``limit`` notes whose best chunk is closest to the normalised vector ``query``, best first."""
        with self._lock:
            used = len(self._owners)
            if not used:
                return []
            bits = np.packbits(quantise(query[None, :])[0] > 0, axis=1)[0]
            apart = np.bitwise_count(self._matrix[:used] ^ bits).sum(axis=1, dtype=np.int32)
            apart[self._scales[:used] == 0] = self._dim + 1  # a free row
            take = min(used, max(limit * 4, _DRAWN))
            drawn = np.argpartition(apart, take - 1)[:take]
            owners: dict[str, None] = {}
            for slot in drawn[np.argsort(apart[drawn], kind="stable")]:
                owner = self._owners[slot]
                if owner is not None and owner != exclude:
                    owners.setdefault(owner, None)
            found = [self._exact(query, owner) for owner in owners]
        found.sort(key=lambda n: -n.score)
        return found[:limit]

    def scores_of(self, query: np.ndarray, paths: Iterable[str]) -> dict[str, Neighbour]:
        """The best chunk of each of ``paths`` that has vectors, against the normalised vector ``query``."""
        with self._lock:
            return {path: self._exact(query, path) for path in paths if path in self._rows}

    def vector_of(self, path: str) -> np.ndarray | None:
        """Not kept in memory here; a note's own vector comes from the store of its own model."""
        return None

    def _exact(self, query: np.ndarray, path: str) -> Neighbour:
        """``path``'s best chunk against ``query`` from its int8 rows in the file (called locked)."""
        rows = self._conn.execute(
            "SELECT start, scale, vector FROM chunks WHERE path = ? AND seq >= 0 AND length(vector) = ?",
            (path, self._dim),
        ).fetchall()
        if not rows:
            return Neighbour(path, 0.0, 0)
        matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype=np.int8).reshape(len(rows), self._dim)
        scores = (matrix.astype(np.float32) @ query) * np.array([row[1] for row in rows], dtype=np.float32)
        best = int(np.argmax(scores))
        return Neighbour(path, float(scores[best]), int(rows[best][0]))
