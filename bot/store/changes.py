"""Change sets: what each run changed in the vault, and which run took back which.

A run's changes (:class:`vault.Change`, recorded by the vault as it writes) are kept as a JSON array
in the run's own row (``runs.changes``), written by the statement that ends the run: a turn that
changes the vault costs no statement more than one that does not. An undo is a run too: its own
changes take back another run's, and ``undos`` says which run it took back. A run is *undone* while
an undo of it is not itself undone (undoing the undo puts the run's changes back).

The runs of one message (an attempt the model cut short, its retry, the filing of a dead letter) are
one turn to undo: a retry finds the note its first attempt wrote already there, and changes nothing.
So a run's change set here is its message's, and undoing one of them undoes them all.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bot.db import Database, Reads, now_iso

if TYPE_CHECKING:
    from vault import Change

__all__ = ["MERGED_CHANGES", "ChangeSet", "Changes", "encode_changes", "undo_writes"]

_json = json.JSONEncoder(ensure_ascii=False).encode

# ``runs.changes`` with the change set ``:changes`` (JSON, or NULL for none) added after what it holds: a
# run that waited for the person kept its changes so far, and its end adds the rest.
MERGED_CHANGES = """CASE WHEN :changes IS NULL THEN changes WHEN changes IS NULL THEN :changes
    ELSE (SELECT json_group_array(json(value)) FROM
          (SELECT value FROM json_each(changes) UNION ALL SELECT value FROM json_each(:changes))) END"""
# An undo run whose own undo is not recorded: the run it names is undone.
_ACTIVE_UNDO = "NOT EXISTS (SELECT 1 FROM undos w WHERE w.run_id = u.undo_run)"
# The runs of the message run :run answered (the run alone when it answered none).
_TURN = "(SELECT id FROM runs WHERE id = :run OR inbound_id = (SELECT inbound_id FROM runs WHERE id = :run))"
# Whether run r, or another run of its message, is undone.
_UNDONE = f"""EXISTS (SELECT 1 FROM undos u JOIN runs t ON t.id = u.run_id
    WHERE (t.id = r.id OR t.inbound_id = r.inbound_id) AND {_ACTIVE_UNDO})"""


@dataclass
class ChangeSet:
    """What one run changed, gathered as it goes and written when it ends: the ``changes``, and for
    an undo the run it ``undoes`` and the ``summary`` it logs."""

    changes: list[Change] = field(default_factory=list)
    undoes: str | None = None
    summary: str | None = None

    def add(self, change: Change) -> None:
        """Record one more change of the run."""
        self.changes.append(change)


def encode_changes(changes: ChangeSet | None) -> str | None:
    """``runs.changes`` for a change set: a JSON array of the changes' fields, or None for none."""
    if changes is None or not changes.changes:
        return None
    return _json([vars(change) for change in changes.changes])


def undo_writes(db: Database, run_id: str, changes: ChangeSet) -> list[Awaitable[int]]:
    """The statements that record an undo: which run it took back, and its interaction-log entry."""
    now = now_iso()
    writes = []
    if changes.undoes is not None:
        writes.append(
            db.execute(
                "INSERT INTO undos (undo_run, run_id, created_at) VALUES (?, ?, ?)", (run_id, changes.undoes, now)
            )
        )
    if changes.summary is not None:
        writes.append(
            db.execute(
                "INSERT INTO interactions (created_at, conversation, category, summary, run_id) "
                "SELECT ?, conversation, 'undo', ?, id FROM runs WHERE id = ?",
                (now, changes.summary, run_id),
            )
        )
    return writes


class Changes:
    """Questions about change sets; they only read, so they work over the review page's connection too."""

    def __init__(self, db: Reads) -> None:
        self._db = db

    async def of_run(self, run_id: str) -> list[Change]:
        """The changes ``run_id`` and the other runs of its message made, in order."""
        rows = await self._db.fetchall(
            f"SELECT changes FROM runs WHERE id IN {_TURN} AND changes IS NOT NULL ORDER BY started_at, rowid",
            {"run": run_id},
        )
        # Imported here: the vault package brings numpy and pypdf, which `vaultbot log` and `runs` never need.
        from vault import Change

        return [Change(**fields) for row in rows for fields in json.loads(row["changes"])]

    async def run(self, run_id: str) -> dict[str, Any] | None:
        """The run's id, conversation, message id and start, or None."""
        row = await self._db.fetchone(
            "SELECT id, conversation, inbound_id, started_at FROM runs WHERE id = ?", (run_id,)
        )
        return None if row is None else dict(row)

    async def undone_by(self, run_id: str) -> str | None:
        """The undo that took ``run_id`` (or another run of its message) back, while it is not itself undone."""
        row = await self._db.fetchone(
            f"SELECT u.undo_run FROM undos u WHERE u.run_id IN {_TURN} AND {_ACTIVE_UNDO} "
            "ORDER BY u.created_at DESC LIMIT 1",
            {"run": run_id},
        )
        return None if row is None else str(row["undo_run"])

    async def active_undos(self, run_id: str) -> list[str]:
        """Every undo of ``run_id`` (or another run of its message) that is not itself undone, oldest first."""
        rows = await self._db.fetchall(
            f"SELECT u.undo_run FROM undos u WHERE u.run_id IN {_TURN} AND {_ACTIVE_UNDO} ORDER BY u.created_at",
            {"run": run_id},
        )
        return [str(row["undo_run"]) for row in rows]

    async def undid(self, undo_run: str) -> str | None:
        """The run that ``undo_run`` took back, when it is an undo."""
        row = await self._db.fetchone("SELECT run_id FROM undos WHERE undo_run = ?", (undo_run,))
        return None if row is None else str(row["run_id"])

    async def latest_to_undo(self, conversation: str) -> str | None:
        """The conversation's latest run that changed the vault and is neither an undo nor undone."""
        row = await self._db.fetchone(
            f"""
            SELECT r.id FROM runs r
            WHERE r.conversation = ?
              AND r.changes IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM undos x WHERE x.undo_run = r.id)
              AND NOT {_UNDONE}
            ORDER BY r.started_at DESC, r.rowid DESC LIMIT 1
            """,
            (conversation,),
        )
        return None if row is None else str(row["id"])

    async def made_by(self, path: str, digest: str, *, besides: str) -> str | None:
        """The latest run since ``besides`` began whose change left ``path`` with the bytes ``digest``."""
        row = await self._db.fetchone(
            """
            SELECT r.id FROM runs r, json_each(r.changes) j
            WHERE r.started_at >= (SELECT started_at FROM runs WHERE id = :run) AND r.changes IS NOT NULL
              AND r.id != :run
              AND json_extract(j.value, '$.path') = :path AND json_extract(j.value, '$.after') = :digest
            ORDER BY r.started_at DESC LIMIT 1
            """,
            {"run": besides, "path": path, "digest": digest},
        )
        return None if row is None else str(row["id"])

    async def also_brought(self, path: str, run_id: str) -> str | None:
        """Another message's run in the same conversation, not undone, that brought the attachment at ``path`` too."""
        row = await self._db.fetchone(
            f"""
            SELECT r.id FROM runs r, json_each(r.changes) j
            WHERE r.conversation = (SELECT conversation FROM runs WHERE id = :run) AND r.changes IS NOT NULL
              AND r.id NOT IN {_TURN}
              AND json_extract(j.value, '$.kind') = 'attachment' AND json_extract(j.value, '$.path') = :path
              AND NOT {_UNDONE}
            ORDER BY r.started_at DESC LIMIT 1
            """,
            {"path": path, "run": run_id},
        )
        return None if row is None else str(row["id"])
