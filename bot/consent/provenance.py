"""Provenance: the words a tainted run put in the vault keep the sources of that run.

Each text a run holding someone else's words writes (a created note, appended text, a replaced body, a
clip in any folder) is kept as a span: the run, the note it went to, the sources, and the text's
fingerprints (:mod:`bot.consent.spans`), in the store, so it outlives the process. Reading a note later
asks :meth:`Provenance.sources_in` of the text shown to the model: the sources of every span still in
it, found by content, so a rename in Obsidian, a hand edit beside the span or an undo and its redo
change nothing, and the lines the person wrote (or rewrote) are theirs. What the person typed in the
conversation is left out of a span when it is kept: copying their own words does not make them someone
else's.

A note's words reach the model in a label naming where they came from (:func:`note_source`); a run
that reads them is tainted by that label, and what it writes in turn keeps the first sources
(:func:`origins`), not a label of a label.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.consent.spans import fingerprints, normal, short
from bot.db import Database, now_iso

if TYPE_CHECKING:  # the vault package brings numpy and pypdf, which `vaultbot log` never needs
    from vault import Change

__all__ = ["HOLDING", "Provenance", "Span", "note_source", "origins", "with_sources"]

HOLDING = " holding words from "


def note_source(sources: Iterable[str], what: str = "note") -> str:
    """The label's source for vault text written by a run holding ``sources``: ``note holding words from web page``."""
    return f"{what}{HOLDING}{', '.join(sorted(origins(sources)))}"


def origins(sources: Iterable[str]) -> frozenset[str]:
    """The first sources behind ``sources``: a note's or a task's label (:func:`note_source`) stands for its own."""
    found: set[str] = set()
    for source in sources:
        _, holding, behind = source.partition(HOLDING)
        if holding:
            found.update(part.strip() for part in behind.split(",") if part.strip())
        else:
            found.add(source)
    return frozenset(found)


def with_sources(change: Change, sources: Iterable[str]) -> Change:
    """``change`` as the run's record keeps it: with the first sources of someone else's words in it
    (``detail["sources"]``), which ``vaultbot undo`` and the review page show; as it is for a clean run."""
    first = origins(sources)
    if not first:
        return change
    return dataclasses.replace(change, detail={**change.detail, "sources": sorted(first)})


@dataclass(frozen=True)
class Span:
    """One kept span: the run that wrote it, where, what kind of change, and its first sources."""

    id: int
    run_id: str
    path: str
    kind: str
    sources: frozenset[str]


class Provenance:
    """The spans of one store."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def keep(
        self, *, run_id: str, path: str, kind: str, text: str, sources: Iterable[str], own: str = ""
    ) -> bool:
        """Keep ``text`` (written to ``path`` by ``run_id``) with ``sources``, less what the person typed
        (``own``); False when nothing of it is left to keep."""
        first = origins(sources)
        if not first:
            return False
        theirs = fingerprints(own) if own else set()
        marks = fingerprints(text) - theirs
        whole = short(text)
        if whole is not None and own and whole in normal(own):
            whole = None
        if not marks and whole is None:
            return False
        async with self._db.transaction() as tx:
            row = await tx.fetchone(
                "INSERT INTO provenance (run_id, path, kind, sources, short, created_at) VALUES (?, ?, ?, ?, ?, ?) "
                "RETURNING id",
                (run_id, path, kind, json.dumps(sorted(first), ensure_ascii=False), whole, now_iso()),
            )
            assert row is not None
            await tx.executemany(
                "INSERT OR IGNORE INTO provenance_marks (mark, span) VALUES (?, ?)", [(m, row["id"]) for m in marks]
            )
        return True

    async def spans_in(self, text: str, *, titles: bool = False) -> list[Span]:
        """The kept spans whose words ``text`` still holds (any :data:`~bot.consent.spans.FOUND_FROM`
        words of one, or the whole of a short one), oldest first. ``titles``: ``text`` is notes' titles,
        looked for among the titles of the notes tainted runs created (and only there: a note's body
        naming such a note is not its words)."""
        folded = normal(text)
        if not folded:
            return []
        marks = json.dumps(sorted(fingerprints(text)))
        rows = await self._db.fetchall(
            """
            SELECT p.id, p.run_id, p.path, p.kind, p.sources FROM provenance p
            WHERE (p.id IN (SELECT m.span FROM json_each(?) j JOIN provenance_marks m ON m.mark = j.value)
                   OR (p.short IS NOT NULL AND instr(?, p.short) > 0))
              AND (p.kind = 'title') = ?
            ORDER BY p.id
            """,
            (marks, folded, titles),
        )
        return [
            Span(row["id"], row["run_id"], row["path"], row["kind"], frozenset(json.loads(row["sources"])))
            for row in rows
        ]

    async def sources_in(self, text: str, *, titles: bool = False) -> frozenset[str]:
        """The first sources of the spans ``text`` holds (:meth:`spans_in`); empty when it holds none."""
        found: set[str] = set()
        for span in await self.spans_in(text, titles=titles):
            found |= span.sources
        return frozenset(found)

    async def of_run(self, run_id: str) -> dict[str, frozenset[str]]:
        """The sources of each path a run wrote tainted words to (for ``vaultbot undo`` and the review page)."""
        rows = await self._db.fetchall("SELECT path, sources FROM provenance WHERE run_id = ? ORDER BY id", (run_id,))
        kept: dict[str, set[str]] = {}
        for row in rows:
            kept.setdefault(row["path"], set()).update(json.loads(row["sources"]))
        return {path: frozenset(sources) for path, sources in kept.items()}
