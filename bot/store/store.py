"""The application's records in SQLite: conversation history, runs with their steps, interactions.

Everything here is append-only except a run's closing fields (and a refusal's entry in the
interaction log, which counts the stranger's messages: :mod:`bot.store.strangers`). JSON columns hold what the model saw
and produced, so a person can query the audit trail with ``sqlite3`` and ``json_extract``.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any

from bot.clock import day_bounds, unstamp
from bot.db import Database, Row, now_iso, to_iso
from bot.store import usage as _usage
from bot.store.changes import MERGED_CHANGES, ChangeSet, encode_changes, undo_writes
from bot.store.usage import CallUsage, UsageRow

__all__ = ["CallUsage", "ServedPage", "Step", "Store", "Turn", "UsageRow", "encode_turn"]


@dataclass(frozen=True)
class Step:
    """One model call, tool call or event of a run's audit trail, as :meth:`Store.add_steps` writes it;
    a model call's ``call`` is its tokens and cost. Stamped when it is made, which may be before it is written."""

    kind: str
    name: str
    input: Any
    output: Any
    is_error: bool
    duration_ms: float
    usage: dict[str, int] | None = None
    summary: str | None = None
    call: CallUsage | None = None
    created_at: str = field(default_factory=now_iso)


@dataclass(frozen=True)
class Turn:
    """One stored turn: its messages, their estimated token cost (0 when not known), and its row id
    (0 when not known), which orders turns and picks where the history window starts."""

    messages: list[dict[str, Any]]
    tokens: int
    id: int = 0


# Enough for the history windows of a few hundred active conversations.
_DECODED_TURNS = 5000


# Built once: json.dumps with options builds a new encoder on every call, and a turn encodes a dozen values.
_json = json.JSONEncoder(ensure_ascii=False, default=str).encode


def encode_turn(messages: list[dict[str, Any]]) -> str:
    """A turn's messages as :meth:`Store.append_encoded_turn` stores them (JSON text)."""
    return _json(messages)


class Store:
    """History, audit trail and interaction log on one database."""

    def __init__(self, db: Database) -> None:
        self._db = db
        # Stored turns never change, and every message re-reads its conversation's recent ones:
        # each is decoded from JSON once, then kept (the most recently read few thousand).
        self._decoded: OrderedDict[int, Turn] = OrderedDict()

    @property
    def db(self) -> Database:
        """The database the store is on, for the records kept beside it (dead letters)."""
        return self._db

    # History

    async def append_turn(
        self, conversation: str, inbound_id: str, messages: list[dict[str, Any]], *, tokens: int = 0
    ) -> bool:
        """Append one turn (the user's message and everything after it) with its estimated token
        cost; once per inbound message. Returns False when the turn was already there (a re-run
        after a crash)."""
        return await self.append_encoded_turn(conversation, inbound_id, encode_turn(messages), tokens)

    async def append_encoded_turn(self, conversation: str, inbound_id: str, encoded: str, tokens: int) -> bool:
        """:meth:`append_turn` with the messages already encoded by :func:`encode_turn` (a caller
        that also estimates their tokens from the text encodes them once)."""
        added = await self._db.execute(
            "INSERT INTO turns (conversation, inbound_id, messages, tokens, created_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (conversation, inbound_id) DO NOTHING",
            (conversation, inbound_id, encoded, tokens, now_iso()),
        )
        return added > 0

    async def load_history(self, conversation: str, max_turns: int) -> list[Turn]:
        """The last ``max_turns`` turns of a conversation, oldest first.

        Only the newest turns are read (an index walk backwards), so the cost does not grow with
        the conversation's length.
        """
        if max_turns <= 0:
            return []
        rows = await self._db.fetchall(
            """
            SELECT id, messages, tokens FROM turns
            WHERE conversation = :c
              AND id > coalesce((SELECT after_turn FROM history_resets WHERE conversation = :c), 0)
            ORDER BY id DESC LIMIT :n
            """,
            {"c": conversation, "n": max_turns},
        )
        return [self._turn(row) for row in reversed(rows)]

    def _turn(self, row: Row) -> Turn:
        """A stored turn, decoded once and shared between reads: callers must not change its messages."""
        turn_id = row["id"]
        turn = self._decoded.get(turn_id)
        if turn is None:
            turn = self._decoded[turn_id] = Turn(json.loads(row["messages"]), row["tokens"], turn_id)
            if len(self._decoded) > _DECODED_TURNS:
                self._decoded.popitem(last=False)
        else:
            self._decoded.move_to_end(turn_id)
        return turn

    async def reset_history(self, conversation: str) -> None:
        """Start the conversation afresh: earlier turns stay stored but are no longer given to the model."""
        await self._db.execute(
            """
            INSERT INTO history_resets (conversation, after_turn, created_at)
            VALUES (:c, (SELECT coalesce(max(id), 0) FROM turns WHERE conversation = :c), :now)
            ON CONFLICT (conversation) DO UPDATE SET after_turn = excluded.after_turn, created_at = excluded.created_at
            """,
            {"c": conversation, "now": now_iso()},
        )

    # Runs and steps

    async def start_run(
        self, run_id: str, *, conversation: str, inbound_id: str | None, model: str, mode: str, rerun: bool = False
    ) -> None:
        """Record that a run began. On a ``rerun`` (the message was delivered before), an earlier run
        of it still marked running was cut short by a crash, and is closed as ``interrupted`` so
        every run ends with a status."""
        now = now_iso()
        # Two statements, each true on its own: no transaction needed around them.
        if rerun and inbound_id is not None:
            await self._db.execute(
                "UPDATE runs SET status = 'interrupted', finished_at = ?, "
                "reason = 'the process stopped during this run; the message was handled again' "
                "WHERE inbound_id = ? AND status = 'running'",
                (now, inbound_id),
            )
        await self._db.execute(
            "INSERT INTO runs (id, conversation, inbound_id, model, mode, status, started_at) "
            "VALUES (?, ?, ?, ?, ?, 'running', ?)",
            (run_id, conversation, inbound_id, model, mode, now),
        )

    async def add_step(
        self,
        run_id: str,
        *,
        kind: str,
        name: str,
        input: Any,
        output: Any,
        is_error: bool,
        duration_ms: float,
        usage: dict[str, int] | None = None,
        summary: str | None = None,
        call: CallUsage | None = None,
    ) -> None:
        """Append one model call, tool call or event to a run's audit trail; a model call's
        ``call`` (tokens and cost) is recorded after it. Each is a statement of its own: a
        transaction around the two would make neither more true (if the second fails, the call's
        cost goes unrecorded either way) and would hold up every other conversation's statements.

        Written when this returns, so the review page shows a run's steps as it goes; if the write
        fails, the caller gets the error (a turn fails and is run again rather than go unrecorded).
        """
        await self.add_steps(run_id, [Step(kind, name, input, output, is_error, duration_ms, usage, summary, call)])

    async def add_steps(self, run_id: str, steps: Sequence[Step]) -> None:
        """:meth:`add_step` for several steps at once (a round of tool calls), numbered in order after the
        run's others: one statement for them all (all or none), sent with their calls' usage in one
        trip to the database."""
        if not steps:
            return
        rows = ", ".join(["(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"] * len(steps))
        params: list[Any] = [run_id]
        for offset, step in enumerate(steps):
            usage = None if step.usage is None else _json(step.usage)
            params += (offset, step.kind, step.name, _json(step.input), _json(step.output), int(step.is_error))
            params += (step.duration_ms, usage, step.summary, step.created_at)
        # Numbered in SQL: a run's steps also come from elsewhere (a transcript, a document, a command).
        insert = self._db.execute(
            f"""
            INSERT INTO steps
                (run_id, idx, kind, name, input, output, is_error, duration_ms, usage, summary, created_at)
            SELECT next.run_id, next.idx + step.column1, step.column2, step.column3, step.column4, step.column5,
                   step.column6, step.column7, step.column8, step.column9, step.column10
            FROM (SELECT ?1 AS run_id, coalesce(max(idx), -1) + 1 AS idx FROM steps WHERE run_id = ?1) AS next,
                 (VALUES {rows}) AS step
            """,
            params,
        )
        costs = [self._db.execute(*_usage.usage_statement(run_id, s.call)) for s in steps if s.call is not None]
        await self._db.gather(insert, *costs)

    async def mark_run(self, run_id: str, status: str, reason: str | None = None) -> None:
        """Set a run's status while it has not ended: ``waiting`` for the person, ``running`` again."""
        await self._db.execute("UPDATE runs SET status = ?, reason = ? WHERE id = ?", (status, reason, run_id))

    async def keep_changes(self, run_id: str, changes: ChangeSet) -> None:
        """Keep what a run changed so far with it, while it waits (its end adds what it changes after)."""
        await self._db.execute(
            f"UPDATE runs SET changes = {MERGED_CHANGES} WHERE id = :run",
            {"changes": encode_changes(changes), "run": run_id},
        )

    async def finish_run(
        self,
        run_id: str,
        *,
        status: str,
        reason: str | None,
        usage: dict[str, int],
        tools_called: list[str],
        final_text: str | None,
        changes: ChangeSet | None = None,
    ) -> None:
        """Close a run with how it ended, and keep the ``changes`` it made in the vault with it
        (:mod:`bot.store.changes`; an undo's record too, its statements sent together)."""
        now = now_iso()
        end = self._db.execute(
            f"""
            UPDATE runs SET status = :status, reason = :reason, usage = :usage, tools_called = :tools,
                final_text = :text, changes = {MERGED_CHANGES}, finished_at = :now,
                duration_ms = (julianday(:now) - julianday(started_at)) * 86400000.0
            WHERE id = :run
            """,
            {
                "status": status,
                "reason": reason,
                "usage": _json(usage),
                "tools": _json(tools_called),
                "text": final_text,
                "changes": encode_changes(changes),
                "now": now,
                "run": run_id,
            },
        )
        if changes is None or (changes.undoes is None and changes.summary is None):
            await end
        else:
            await self._db.gather(end, *undo_writes(self._db, run_id, changes))

    async def list_runs(self, *, limit: int = 20, since: datetime | None = None) -> list[dict[str, Any]]:
        """Runs, newest first."""
        rows = await self._db.fetchall(
            f"SELECT *, {_RUN_COST}, {_ASKED} FROM runs WHERE started_at >= ? "
            "ORDER BY started_at DESC, rowid DESC LIMIT ?",
            (_floor(since), limit),
        )
        return [_run(row) for row in rows]

    async def runs_starting_with(self, prefix: str, *, limit: int = 10) -> list[dict[str, Any]]:
        """Runs whose id starts with ``prefix``, in id order (at most ``limit``): what a short id names."""
        # A range on the primary key, not LIKE: LIKE ignores case and reads '_' and '%' as wildcards.
        rows = await self._db.fetchall(
            "SELECT id, started_at, conversation, status FROM runs WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
            (prefix, prefix + "\U0010ffff", limit),
        )
        return [dict(row) for row in rows]

    async def get_run(self, run_id: str) -> dict[str, Any] | None:
        """One run with its ``steps``, or None."""
        row = await self._db.fetchone(f"SELECT *, {_RUN_COST} FROM runs WHERE id = ?", (run_id,))
        if row is None:
            return None
        steps = await self._db.fetchall("SELECT * FROM steps WHERE run_id = ? ORDER BY idx", (run_id,))
        return {**_run(row), "steps": [_step(s) for s in steps]}

    # Usage and cost

    async def record_usage(self, run_id: str | None, call: CallUsage) -> None:
        """Record a model call made outside a step (the audit summariser's, for one)."""
        await _usage.record_usage(self._db, run_id, call)

    async def usage_by_day(self, since: datetime | None, tz: tzinfo) -> list[UsageRow]:
        """Tokens and cost per day (``YYYY-MM-DD`` in ``tz``) and per model since ``since``
        (everything when None), oldest day first, models in name order within a day."""
        return await _usage.usage_by_day(self._db, since, tz)

    async def spend_today(self, tz: tzinfo, now: datetime | None = None) -> float:
        """Dollars spent since the start of the day in ``tz`` that contains ``now`` (default: now)."""
        moment = (now or datetime.now(UTC)).astimezone(tz)
        start, end = day_bounds(moment.date(), tz)
        return await _usage.spend_between(self._db, start, end)

    async def models_used(self) -> list[tuple[str, str]]:
        """Every (name sent, name the API answered with) pair usage was recorded for, in name order."""
        rows = await self._db.fetchall("SELECT DISTINCT model, api_model FROM usage ORDER BY model, api_model")
        return [(row["model"], row["api_model"]) for row in rows]

    # Interactions

    async def add_interaction(self, *, conversation: str, category: str, summary: str, run_id: str | None) -> int:
        """Add an entry to the interaction log; returns its id."""
        row = await self._db.fetchone(
            "INSERT INTO interactions (created_at, conversation, category, summary, run_id) "
            "VALUES (?, ?, ?, ?, ?) RETURNING id",
            (now_iso(), conversation, category, summary, run_id),
        )
        assert row is not None
        return int(row["id"])

    async def list_interactions(self, *, limit: int = 20, since: datetime | None = None) -> list[dict[str, Any]]:
        """The interaction log, newest first."""
        rows = await self._db.fetchall(
            "SELECT id, created_at, conversation, category, summary, run_id FROM interactions "
            "WHERE created_at >= ? ORDER BY id DESC LIMIT ?",
            (_floor(since), limit),
        )
        return [dict(row) for row in rows]

    # The review page's access token

    async def review_token(self, new: str) -> str:
        """The review page's token kept in the store; ``new`` is kept (and returned) if there is none yet."""
        await self._db.execute(
            "INSERT INTO review_token (id, token, created_at) VALUES (1, ?, ?) ON CONFLICT (id) DO NOTHING",
            (new, now_iso()),
        )
        row = await self._db.fetchone("SELECT token FROM review_token WHERE id = 1")
        assert row is not None
        return str(row["token"])

    async def stored_review_token(self) -> str | None:
        """The review page's token kept in the store, if one was generated."""
        row = await self._db.fetchone("SELECT token FROM review_token WHERE id = 1")
        return None if row is None else str(row["token"])

    async def record_review_page(self, page: ServedPage) -> None:
        """Record that this process serves the review page at ``page.address`` (before it serves)."""
        await self._db.execute(
            "INSERT INTO review_pages (pid, address, host, port, token_sha256, started_at) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (pid) DO UPDATE SET address = excluded.address, host = excluded.host, port = excluded.port, "
            "token_sha256 = excluded.token_sha256, started_at = excluded.started_at",
            (page.pid, page.address, page.host, page.port, page.token_sha256, now_iso()),
        )

    async def review_pages(self) -> list[ServedPage]:
        """Where processes said they serve the review page, the latest first (some may be gone)."""
        rows = await self._db.fetchall(
            "SELECT pid, address, host, port, token_sha256 FROM review_pages ORDER BY started_at DESC"
        )
        return [ServedPage(**dict(row)) for row in rows]

    # The running bot's configuration, for the review page

    async def remember_sent(self, key: str, chat: str, message: str) -> None:
        """Remember where a channel showed a message it may edit later (``key``: what it is, such as a
        question for consent's ``question:ID``); the first place recorded stays."""
        await self._db.execute(
            "INSERT INTO sent_messages (key, chat, message, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (key, chat, message, now_iso()),
        )

    async def sent(self, key: str) -> tuple[str, str] | None:
        """Where the message remembered as ``key`` was shown: (chat, message), or None."""
        row = await self._db.fetchone("SELECT chat, message FROM sent_messages WHERE key = ?", (key,))
        return None if row is None else (row["chat"], row["message"])

    async def record_bot_config(self, config: dict[str, Any]) -> None:
        """Keep the configuration the bot starts with (no secret in it: the caller's promise)."""
        await self._db.execute(
            "INSERT INTO bot_config (id, config, recorded_at) VALUES (1, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET config = excluded.config, recorded_at = excluded.recorded_at",
            (_json(config), now_iso()),
        )


@dataclass(frozen=True)
class ServedPage:
    """A process serving the review page: its pid, the address (without the token), the host and
    port it listens on, and the SHA-256 of its token (hex), which tells a reader which token opens
    it without the store keeping a token it was not given to keep."""

    pid: int
    address: str
    host: str
    port: int
    token_sha256: str


# A run's cost: the sum over its model calls (the usage_by_run index makes this a short walk).
_RUN_COST = "(SELECT coalesce(sum(cost_usd), 0.0) FROM usage WHERE usage.run_id = runs.id) AS cost_usd"


# What the person sent that the run answered: the first message of its turn in the history.
_ASKED = (
    "(SELECT json_extract(t.messages, '$[0].content') FROM turns t "
    "WHERE t.conversation = runs.conversation AND t.inbound_id = runs.inbound_id) AS asked"
)


def _about(asked: str | None) -> str | None:
    """The words of a turn's first message, without the time stamp the runner put before them."""
    if asked is None:
        return None
    try:
        blocks = json.loads(asked) if asked.startswith("[") else None
    except ValueError:
        blocks = None
    if isinstance(blocks, list):
        asked = " ".join(str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text")
    return unstamp(asked).strip() or None


def _floor(since: datetime | None) -> str:
    # Stored times are fixed-format ISO text, so "" sorts before all of them.
    return "" if since is None else to_iso(since)


def _run(row: Any) -> dict[str, Any]:
    run = dict(row)
    run.pop("changes", None)  # the change set, read where it is shown (bot.store.changes)
    run["usage"] = json.loads(run["usage"])
    run["tools_called"] = json.loads(run["tools_called"])
    if "asked" in run:
        run["about"] = _about(run.pop("asked"))
    return run


def _step(row: Any) -> dict[str, Any]:
    step = dict(row)
    step["index"] = step.pop("idx")
    for key in ("input", "output"):
        step[key] = json.loads(step[key])
    step["usage"] = None if step["usage"] is None else json.loads(step["usage"])
    step["is_error"] = bool(step["is_error"])
    return step
