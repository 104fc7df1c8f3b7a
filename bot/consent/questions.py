"""Questions for consent, kept on disk: a waiting call is data, not a coroutine parked in memory.

A question is ``asked`` until exactly one of these decides it: the person's answer (``allowed`` or
``denied``), its timeout (``expired``) or a new message from the person (``declined``). Deciding is
one conditional ``UPDATE``: whichever comes first wins, and the others find it decided. The message
that decided it may decide it again (a redelivery after a crash), so a resumed run is redone, not lost.

The call itself is made at most once: :meth:`Questions.start_call` marks it as being made before it
is, and :meth:`Questions.record_outcome` keeps its result, so a run resumed again after a crash reuses
the result, and one cut off while the call was in flight is told so rather than making it again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, Field

from bot.db import Database, Row, now_iso

__all__ = ["CALLING", "Question", "Questions", "Waiting"]

Decision = Literal["allowed", "denied", "expired", "declined"]
# The outcome of a call that was being made when the process stopped.
CALLING: dict[str, Any] = {"calling": True}


class Waiting(BaseModel):
    """A run as it stood when it stopped to ask: enough to go on with no state kept in memory."""

    turn: list[dict[str, Any]]  # the turn so far, its last message the model's response with the calls
    results: list[dict[str, Any]] = Field(default_factory=list)  # tool results of that response so far
    calls: list[dict[str, Any]]  # the calls of that response not yet made; the first is the one asked about
    hints: list[str] = Field(default_factory=list)
    failed: str | None = None  # the first call of that response that failed
    usage: dict[str, int] = Field(default_factory=dict)
    tools_called: list[str] = Field(default_factory=list)
    guard: tuple[int, list[str]] = (0, [])  # the call guard's count and recent calls
    # The run's context (bot.tools.ToolContext) beside its conversation and run id.
    channel: str
    recipient: str
    inbound_id: str
    # Who may answer: the sender of the message the run answers (empty in questions stored before it was kept).
    person: str = ""
    sent: int = 0
    scheduled: int = 0
    read: list[str] = Field(default_factory=list)
    # What the run held (bot.tools.ToolContext): the allowed call keeps these sources (bot.consent.provenance).
    sources: list[str] = Field(default_factory=list)
    own: str = ""


@dataclass(frozen=True)
class Question:
    """One question, as stored."""

    id: str
    run_id: str
    conversation: str
    tool: str
    input: dict[str, Any]
    question: str
    state: str
    waiting: Waiting
    answer_message: int | None
    outcome: dict[str, Any] | None
    asked_at: str
    expires_at: str
    decided_at: str | None
    decided_by: str | None

    @property
    def asked_call(self) -> dict[str, Any]:
        """The tool_use block the person was asked about."""
        return self.waiting.calls[0]


class Questions:
    """The consent questions of one database."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def ask(
        self,
        *,
        id: str,
        run_id: str,
        conversation: str,
        tool: str,
        input: Any,
        question: str,
        waiting: Waiting,
        timeout: float,
    ) -> None:
        """Store a new question (in the caller's transaction, if any)."""
        question_id = id
        expires = datetime.now(UTC) + timedelta(seconds=timeout)
        await self._db.execute(
            "INSERT INTO consent_questions (id, run_id, conversation, tool, input, question, waiting, asked_at, "
            "expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                question_id,
                run_id,
                conversation,
                tool,
                json.dumps(input, ensure_ascii=False),
                question,
                waiting.model_dump_json(),
                now_iso(),
                expires.isoformat(timespec="microseconds"),
            ),
        )

    async def decide(
        self, question_id: str, decision: Decision, *, by: str, message: int | None
    ) -> tuple[Question, bool] | None:
        """Decide an asked question; returns it and True. One that ``message`` decided before (a
        redelivery after a crash) is returned with False, to be gone on with again but not recorded twice;
        None when it was decided otherwise (or does not exist)."""
        row = await self._db.fetchone(
            "UPDATE consent_questions SET state = ?, decided_at = ?, decided_by = ?, answer_message = ? "
            "WHERE id = ? AND state = 'asked' RETURNING *",
            (decision, now_iso(), by, message, question_id),
        )
        if row is not None:
            return _question(row), True
        if message is None:
            return None
        row = await self._db.fetchone(
            "SELECT * FROM consent_questions WHERE id = ? AND answer_message = ? AND state = ?",
            (question_id, message, decision),
        )
        return None if row is None else (_question(row), False)

    async def get(self, question_id: str) -> Question | None:
        """A question by id."""
        row = await self._db.fetchone("SELECT * FROM consent_questions WHERE id = ?", (question_id,))
        return None if row is None else _question(row)

    async def open_in(self, conversation: str) -> list[Question]:
        """The questions of ``conversation`` still waiting for an answer, oldest first."""
        rows = await self._db.fetchall(
            "SELECT * FROM consent_questions WHERE conversation = ? AND state = 'asked' ORDER BY asked_at",
            (conversation,),
        )
        return [_question(row) for row in rows]

    async def start_call(self, question_id: str) -> dict[str, Any] | None:
        """Mark the allowed call as being made; None when it may be made now, else what is known of it
        already: its result, or :data:`CALLING` when a process stopped while making it."""
        changed = await self._db.execute(
            "UPDATE consent_questions SET outcome = ? WHERE id = ? AND outcome IS NULL",
            (json.dumps(CALLING), question_id),
        )
        if changed:
            return None
        row = await self._db.fetchone("SELECT outcome FROM consent_questions WHERE id = ?", (question_id,))
        assert row is not None and row["outcome"] is not None
        return json.loads(row["outcome"])

    async def record_outcome(self, question_id: str, outcome: dict[str, Any]) -> None:
        """Keep the allowed call's result, so a run resumed again reuses it."""
        await self._db.execute(
            "UPDATE consent_questions SET outcome = ? WHERE id = ?",
            (json.dumps(outcome, ensure_ascii=False), question_id),
        )


def _question(row: Row) -> Question:
    return Question(
        id=row["id"],
        run_id=row["run_id"],
        conversation=row["conversation"],
        tool=row["tool"],
        input=json.loads(row["input"]),
        question=row["question"],
        state=row["state"],
        waiting=Waiting.model_validate_json(row["waiting"]),
        answer_message=row["answer_message"],
        outcome=None if row["outcome"] is None else json.loads(row["outcome"]),
        asked_at=row["asked_at"],
        expires_at=row["expires_at"],
        decided_at=row["decided_at"],
        decided_by=row["decided_by"],
    )
