"""Read-only questions about the records, as the review page asks them.

Every query here returns a bounded page of rows found through an index, so a page costs about the
same on a store of a hundred interactions and of a hundred thousand (the one exception: filtering
the timeline by a run status that few runs have walks the log). Nothing here writes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, tzinfo
from typing import Any

from bot.clock import day_bounds, unstamp
from bot.db import Reads, to_iso
from bot.store import usage as _usage
from bot.store.changes import Changes
from bot.store.store import _RUN_COST, _run, _step
from bot.store.usage import UsageRow

__all__ = ["RUN_STATUSES", "NotePage", "StoreReader", "TimelineFilter", "fts_query"]

RUN_STATUSES = ("running", "completed", "stopped", "escalated", "failed", "dead_lettered", "interrupted")
# How many distinct categories or conversations a filter menu offers at most.
_MENU = 200
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class TimelineFilter:
    """What the timeline shows: words to search, exact filters, a time range (``since`` inclusive,
    ``until`` exclusive), and ``before``, the id the page starts below (keyset pagination)."""

    query: str = ""
    category: str = ""
    conversation: str = ""
    status: str = ""
    since: datetime | None = None
    until: datetime | None = None
    before: int | None = None


def fts_query(text: str) -> str:
    """The user's words as an FTS5 query that matches entries containing all of them (each word
    quoted, so no input is read as FTS syntax); the last word also matches as a prefix."""
    words = _WORD.findall(text)
    if not words:
        return ""
    quoted = [f'"{w}"' for w in words]
    quoted[-1] += "*"
    return " ".join(quoted)


@dataclass(frozen=True)
class NotePage:
    """One page of the notes list, newest write first, with the cursors of the pages either side
    (None where there is none): pass ``older`` as ``before``, ``newer`` as ``after``."""

    notes: list[dict[str, Any]]
    older: str | None
    newer: str | None


# A note's place in the list: its latest successful write or clipping (the time, then the step's
# rowid, which tells apart writes recorded in the same microsecond). Written as ``<created_at>~<rowid>``.
# The tools are named as the steps' partial indexes name them, so the planner uses those indexes.
_NOTE_WRITES = "s.kind = 'tool' AND s.name IN ('vault_write', 'clip_link') AND NOT s.is_error"
_LATER_WRITE = """
    SELECT 1 FROM steps t
    WHERE t.kind = 'tool' AND t.name IN ('vault_write', 'clip_link') AND NOT t.is_error
      AND json_extract(t.output, '$.path') = json_extract(s.output, '$.path')
      AND (t.created_at, t.rowid) > (s.created_at, s.rowid)
"""


class StoreReader:
    """The review page's view of the database: timeline, runs, notes, usage, health. It only
    asks questions, so it works over a read-only connection."""

    def __init__(self, db: Reads) -> None:
        self._db = db

    async def timeline(self, where: TimelineFilter, *, limit: int = 50) -> tuple[list[dict[str, Any]], int | None]:
        """A page of interactions, newest first, with their run's status and the notes the run wrote;
        and the id to pass as ``before`` for the next page (None on the last page)."""
        match = fts_query(where.query)
        # With words to find, the full-text index drives: it yields rowids newest first without
        # sorting, as long as the order and the cursor are on its own rowid.
        key = "f.rowid" if match else "i.id"
        clauses, params = _timeline_where(where, key)
        source = "interactions i"
        if match:
            source = "interactions_fts f JOIN interactions i ON i.id = f.rowid"
            clauses.append("interactions_fts MATCH :match")
            params["match"] = match
        sql = (
            "SELECT i.id, i.created_at, i.conversation, i.category, i.summary, i.run_id, r.status AS run_status "
            f"FROM {source} LEFT JOIN runs r ON r.id = i.run_id "
            f"WHERE {' AND '.join(clauses) or '1'} ORDER BY {key} DESC LIMIT :limit"
        )
        rows = [dict(row) for row in await self._db.fetchall(sql, {**params, "limit": limit + 1})]
        following = rows[limit - 1]["id"] if len(rows) > limit else None
        rows = rows[:limit]
        notes = await self.notes_of_runs([r["run_id"] for r in rows if r["run_id"]])
        for row in rows:
            row["notes"] = notes.get(row["run_id"], [])
        return rows, following

    async def notes_of_runs(self, run_ids: list[str]) -> dict[str, list[str]]:
        """The notes each run wrote, clipped (``clip_link``) or read as a document, successfully, by run id."""
        if not run_ids:
            return {}
        marks = ", ".join("?" * len(run_ids))
        rows = await self._db.fetchall(
            f"SELECT run_id, coalesce(json_extract(output, '$.path'), json_extract(input, '$.path')) AS path "
            f"FROM steps WHERE run_id IN ({marks}) AND NOT is_error AND ("
            "(kind = 'tool' AND name IN ('vault_write', 'clip_link')) OR (kind = 'event' AND name = 'document')"
            ") ORDER BY idx",
            run_ids,
        )
        found: dict[str, list[str]] = {}
        for row in rows:
            if row["path"] and row["path"] not in found.setdefault(row["run_id"], []):
                found[row["run_id"]].append(row["path"])
        return found

    async def categories(self) -> list[str]:
        """The distinct categories in the log (an index skip-scan, not a table scan)."""
        return await self._distinct("category")

    async def conversations(self) -> list[str]:
        """The distinct conversations in the log."""
        return await self._distinct("conversation")

    async def _distinct(self, column: str) -> list[str]:
        # Each step jumps to the next value in the index: cost grows with the number of values.
        rows = await self._db.fetchall(
            f"""
            WITH RECURSIVE v(x, n) AS (
                SELECT min({column}), 1 FROM interactions
                UNION ALL
                SELECT (SELECT min({column}) FROM interactions WHERE {column} > v.x), n + 1 FROM v
                WHERE v.x IS NOT NULL AND n < {_MENU}
            )
            SELECT x FROM v WHERE x IS NOT NULL
            """
        )
        return [row["x"] for row in rows]

    async def runs(self, *, status: str = "", before: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """Runs, newest first; ``before`` is a ``started_at`` to page below."""
        rows = await self._db.fetchall(
            "SELECT * FROM runs WHERE (:status = '' OR status = :status) AND (:before IS NULL OR started_at < :before) "
            "ORDER BY started_at DESC LIMIT :limit",
            {"status": status, "before": before, "limit": limit},
        )
        return [_run(row) for row in rows]

    async def run_ids_starting_with(self, prefix: str, *, limit: int = 2) -> list[str]:
        """Ids of runs that start with ``prefix`` (at most ``limit``): what a short id names."""
        # A range on the primary key, as Store.runs_starting_with reads it (LIKE would read '_' as a wildcard).
        rows = await self._db.fetchall(
            "SELECT id FROM runs WHERE id >= ? AND id < ? ORDER BY id LIMIT ?", (prefix, prefix + "\U0010ffff", limit)
        )
        return [row["id"] for row in rows]

    async def run(self, run_id: str) -> dict[str, Any] | None:
        """One run with its steps, the user's message, the log entries it made, the notes it wrote,
        and the other attempts at the same message (retries after a failure or a crash)."""
        row = await self._db.fetchone(f"SELECT *, {_RUN_COST} FROM runs WHERE id = ?", (run_id,))
        if row is None:
            return None
        run = _run(row)
        steps = [
            _step(s) for s in await self._db.fetchall("SELECT * FROM steps WHERE run_id = ? ORDER BY idx", (run_id,))
        ]
        await self._price_steps(run_id, steps)
        run["steps"] = steps
        run["message"] = await self._message(run, steps)
        run["interactions"] = [
            dict(r)
            for r in await self._db.fetchall(
                "SELECT id, created_at, category, summary FROM interactions WHERE run_id = ? ORDER BY id", (run_id,)
            )
        ]
        run["notes"] = (await self.notes_of_runs([run_id])).get(run_id, [])
        run["attempts"] = []
        if run["inbound_id"]:
            run["attempts"] = [
                dict(r)
                for r in await self._db.fetchall(
                    "SELECT id, status, reason, started_at FROM runs WHERE inbound_id = ? ORDER BY started_at",
                    (run["inbound_id"],),
                )
            ]
        return run

    async def change_set(self, run_id: str) -> dict[str, Any]:
        """What the run (with the other runs of its message) changed in the vault, the undo that took
        it back (while not itself undone), and the run it took back when it is an undo."""
        changes = Changes(self._db)
        return {
            "changes": await changes.of_run(run_id),
            "undone_by": await changes.undone_by(run_id),
            "undid": await changes.undid(run_id),
        }

    async def _price_steps(self, run_id: str, steps: list[dict[str, Any]]) -> None:
        """Give each model call its ``cost_usd``: usage rows are written one per model call, with its
        step and in the same order, so they pair up; when they do not (a store from before usage
        was recorded), costs stay None."""
        rows = await self._db.fetchall("SELECT cost_usd FROM usage WHERE run_id = ? ORDER BY id", (run_id,))
        calls = [step for step in steps if step["kind"] == "model"]
        for step in steps:
            step["cost_usd"] = None
        if len(rows) == len(calls):
            for step, row in zip(calls, rows, strict=True):
                step["cost_usd"] = row["cost_usd"]

    async def _message(self, run: dict[str, Any], steps: list[dict[str, Any]]) -> str | None:
        """The user's message as they wrote it (without the time stamp the model reads before it):
        from the stored turn, else from the first model call's input (None for a command, which
        keeps no turn and calls no model)."""
        if run["inbound_id"]:
            turn = await self._db.fetchone(
                "SELECT json_extract(messages, '$[0].content') AS content, json_type(messages, '$[0].content') AS kind "
                "FROM turns WHERE conversation = ? AND inbound_id = ?",
                (run["conversation"], run["inbound_id"]),
            )
            if turn is not None:
                said = _said(json.loads(turn["content"]) if turn["kind"] == "array" else turn["content"])
                if said is not None:
                    return said
        for step in steps:
            last = step["input"].get("last") if step["kind"] == "model" and isinstance(step["input"], dict) else None
            if isinstance(last, dict) and (said := _said(last.get("content"))) is not None:
                return said
        return None

    async def notes(self, *, before: str | None = None, after: str | None = None, limit: int = 50) -> NotePage:
        """A page of every note written or page clipped, each once at its latest successful write,
        newest first, with the run that wrote it (and how: the assistant, capture, a command; ``tool``
        says whether it wrote or clipped): the page just
        below the cursor ``before``, or just above ``after``, or the newest. A cursor that does not
        parse starts from the newest."""
        cursor = _note_cursor(after if after is not None else before)
        upward = after is not None and cursor is not None
        where = [_NOTE_WRITES, "json_extract(s.output, '$.path') IS NOT NULL", f"NOT EXISTS ({_LATER_WRITE})"]
        params: dict[str, Any] = {"n": limit + 1}
        if cursor is not None:
            where.append(f"(s.created_at, s.rowid) {'>' if upward else '<'} (:at, :rowid)")
            params |= {"at": cursor[0], "rowid": cursor[1]}
        rows = [
            dict(row)
            for row in await self._db.fetchall(
                "SELECT s.rowid AS step, json_extract(s.output, '$.path') AS path, s.created_at, s.run_id, "
                "s.name AS tool, r.mode, r.model, r.conversation FROM steps s LEFT JOIN runs r ON r.id = s.run_id "
                f"WHERE {' AND '.join(where)} "
                f"ORDER BY s.created_at {'ASC' if upward else 'DESC'}, s.rowid {'ASC' if upward else 'DESC'} LIMIT :n",
                params,
            )
        ]
        more = len(rows) > limit
        rows = rows[:limit]
        if upward:
            rows.reverse()
        marks = [f"{row['created_at']}~{row.pop('step')}" for row in rows]
        if not rows:
            return NotePage([], None, None)
        # Coming up from a page, there are older notes (that page's); going down from one, newer.
        older = marks[-1] if more or upward else None
        newer = marks[0] if (more if upward else cursor is not None) else None
        return NotePage(rows, older, newer)

    async def runs_of_note(self, path: str, *, limit: int = 50) -> list[dict[str, Any]]:
        """The runs that wrote (or clipped) the note at ``path``, newest first."""
        rows = await self._db.fetchall(
            "SELECT s.run_id, s.created_at, "
            "CASE s.name WHEN 'clip_link' THEN 'clip' ELSE json_extract(s.input, '$.mode') END AS mode, "
            "r.status, r.conversation, r.mode AS run_mode, r.model "
            "FROM steps s JOIN runs r ON r.id = s.run_id "
            "WHERE json_extract(s.output, '$.path') = ? AND s.kind = 'tool' AND s.name IN ('vault_write', 'clip_link') "
            "ORDER BY s.created_at DESC LIMIT ?",
            (path, limit),
        )
        return [dict(row) for row in rows]

    # Usage

    async def usage_by_day(self, since: datetime | None, tz: tzinfo) -> list[UsageRow]:
        """Tokens and cost per day in ``tz`` and per model since ``since``, oldest day first."""
        return await _usage.usage_by_day(self._db, since, tz)

    async def spend_today(self, tz: tzinfo) -> float:
        """Dollars spent since the start of today in ``tz``."""
        start, end = day_bounds(datetime.now(tz).date(), tz)
        return await _usage.spend_between(self._db, start, end)

    # Health

    async def message_counts(self) -> dict[str, int]:
        """Messages on the bus per status, all topics; a question's expiry timer counts only while the
        question is open (decided, its timer finds nothing to do: it is not a message waiting)."""
        rows = await self._db.fetchall(
            "SELECT status, count(*) AS n FROM bus_messages m WHERE NOT (m.topic = 'consent' "
            "AND m.dedupe_key LIKE 'question-expiry:%' AND m.status IN ('pending', 'leased') "
            "AND NOT EXISTS (SELECT 1 FROM consent_questions q "
            "WHERE m.dedupe_key = 'question-expiry:' || q.id AND q.state = 'asked')) GROUP BY status"
        )
        return {row["status"]: row["n"] for row in rows}

    async def dead_letters(self, *, limit: int = 100) -> list[dict[str, Any]]:
        """Dead-lettered bus messages, newest first, with their last error and, for a message the
        model could not answer, the id ``vaultbot retry`` takes (the run that filed it) while it waits."""
        rows = await self._db.fetchall(
            "SELECT m.id AS row, json_extract(m.payload, '$.id') AS id, m.topic, m.conversation, m.payload, "
            "m.attempts, m.last_error, m.updated_at, "
            "CASE WHEN d.retried_at IS NULL THEN d.run_id END AS retry_id "
            "FROM bus_messages AS m LEFT JOIN dead_letters AS d ON d.message_id = m.id "
            "WHERE m.status = 'dead' ORDER BY m.id DESC LIMIT ?",
            (limit,),
        )
        return [dict(row) for row in rows]

    async def waiting_dead_letters(self, *, limit: int = 100) -> list[dict[str, Any]]:
        """The dead letters not yet sent again, newest first: text, error, where each was filed, and
        the run that filed it (whose id ``vaultbot retry`` takes)."""
        rows = await self._db.fetchall(
            "SELECT run_id, conversation, text, error, path, created_at FROM dead_letters "
            "WHERE retried_at IS NULL ORDER BY created_at DESC LIMIT ?",
            (limit,),
        )
        return [dict(row) for row in rows]

    async def question(self, question_id: str) -> dict[str, Any] | None:
        """A question for consent: its id, run, conversation, state, and who may answer it and where
        (``channel``, ``person``, ``recipient`` of the run it stopped); None if there is none."""
        row = await self._db.fetchone(
            "SELECT id, run_id, conversation, state, waiting FROM consent_questions WHERE id = ?", (question_id,)
        )
        if row is None:
            return None
        waiting = json.loads(row["waiting"])
        return {
            "id": row["id"],
            "run_id": row["run_id"],
            "conversation": row["conversation"],
            "state": row["state"],
            **{key: str(waiting.get(key, "")) for key in ("channel", "person", "recipient")},
        }

    async def bot_config(self) -> tuple[dict[str, Any], str] | None:
        """The configuration the bot recorded when it last started, and when; None if it never ran."""
        row = await self._db.fetchone("SELECT config, recorded_at FROM bot_config WHERE id = 1")
        return None if row is None else (json.loads(row["config"]), str(row["recorded_at"]))


def _note_cursor(value: str | None) -> tuple[str, int] | None:
    at, _, rowid = (value or "").rpartition("~")
    return (at, int(rowid)) if at and rowid.isdigit() else None


def _timeline_where(where: TimelineFilter, key: str) -> tuple[list[str], dict[str, Any]]:
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for column in ("category", "conversation"):
        value = getattr(where, column)
        if value:
            clauses.append(f"i.{column} = :{column}")
            params[column] = value
    if where.status:
        clauses.append("r.status = :status")
        params["status"] = where.status
    if where.since is not None:
        clauses.append("i.created_at >= :since")
        params["since"] = to_iso(where.since)
    if where.until is not None:
        clauses.append("i.created_at < :until")
        params["until"] = to_iso(where.until)
    if where.before is not None:
        clauses.append(f"{key} < :before")
        params["before"] = where.before
    return clauses, params


def _said(content: Any) -> str | None:
    """The user's words in a message's content: the string, or the last text block (the images that
    came with a message, and their labels, go before it)."""
    if isinstance(content, list):
        texts = [block.get("text") for block in content if isinstance(block, dict) and block.get("type") == "text"]
        content = texts[-1] if texts else None
    return unstamp(content) if isinstance(content, str) else None
