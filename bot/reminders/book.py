"""The durable book of reminders: schedule, list, cancel, and fire what is due through the bus.

Firing one occurrence is one transaction: move the reminder's ``next_at`` on (only if it still
holds that occurrence) and publish the message, keyed on the bus by (reminder, occurrence). Two
instances on one store, or a restart after SIGKILL, therefore fire each occurrence exactly once.
A reminder is only published when due, so it never sits at the head of its conversation's queue.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.bus import INBOUND, Bus, InboundMessage, OutboundMessage, Scheduled, Sender, outbound_topic
from bot.clock import Clock
from bot.db import Database, Row, now_iso
from bot.reminders.timing import (
    PAST_GRACE,
    TimingError,
    check_repeat,
    first_occurrence,
    next_after,
    occurrences_between,
    parse_at,
    parse_rule,
)
from bot.store import Store

__all__ = ["LATE_AFTER", "Reminder", "ReminderBook", "ReminderError", "Who"]

# Later than this, a fired reminder says how late it is (the bot was down or busy).
LATE_AFTER = timedelta(minutes=3)


class ReminderError(Exception):
    """A reminder cannot be scheduled or cancelled; ``error_type`` as in tool failures."""

    def __init__(self, message: str, error_type: str) -> None:
        super().__init__(message)
        self.error_type = error_type


@dataclass(frozen=True)
class Who:
    """The conversation a reminder belongs to and where it is delivered (from the run, never the model)."""

    conversation: str
    channel: str
    recipient: str


@dataclass(frozen=True)
class Reminder:
    """One scheduled message; ``next`` is its next occurrence in the user's zone (None once finished)."""

    id: str
    text: str
    next: datetime | None
    repeat: str | None
    run_model: bool

    def describe(self) -> dict[str, object]:
        """The item ``list_scheduled`` and ``schedule_message`` return."""
        return {
            "id": self.id,
            "text": self.text,
            "next": self.next.isoformat(timespec="seconds") if self.next else None,
            "repeat": self.repeat,
            "run_model": self.run_model,
        }


class ReminderBook:
    """Reminders in the store, on the user's clock."""

    def __init__(
        self, db: Database, bus: Bus, store: Store, clock: Clock, *, max_pending: int, model_runs_per_day: int = 24
    ) -> None:
        """``model_runs_per_day`` caps the scheduled tasks (``run_model``) one conversation runs per day
        (the user's day): past it, an occurrence is skipped and the person told, once that day."""
        self._db = db
        self._bus = bus
        self._store = store
        self._clock = clock
        self._max_pending = max_pending
        self._model_runs_per_day = model_runs_per_day

    async def schedule(
        self,
        who: Who,
        *,
        text: str,
        at: str,
        repeat: str | None,
        run_model: bool,
        request_key: str,
        sources: frozenset[str] = frozenset(),
    ) -> Reminder:
        """Store a reminder; the same ``request_key`` again returns the first one and stores nothing.
        ``sources``: someone else's words the scheduling run held, which a task (``run_model``) keeps:
        its text reaches the model as their words when it runs (``bot.consent``)."""
        existing = await self._by_key(request_key)
        if existing is not None:
            return existing
        if not text.strip():
            raise ReminderError("'text' is empty: say what the reminder should say.", "invalid_input")
        tz, now = self._clock.tz, self._clock.now()
        try:
            start = parse_at(at, tz)
            if repeat:
                check_repeat(repeat, run_model=run_model)
            rule = parse_rule(repeat, start) if repeat else None
        except TimingError as exc:
            raise ReminderError(str(exc), "invalid_input") from None
        if start.astimezone(UTC) < now.astimezone(UTC) - PAST_GRACE:
            when, current = start.isoformat(timespec="seconds"), now.isoformat(timespec="seconds")
            raise ReminderError(f"{when} is in the past (it is now {current}).", "invalid_input")
        first = first_occurrence(start, rule, tz)
        if await self._pending_count(who.conversation) >= self._max_pending:
            raise ReminderError(
                f"You already have {self._max_pending} pending reminders; cancel some first.", "limit_reached"
            )
        stamp = now_iso()
        row = await self._db.fetchone(
            """
            INSERT INTO reminders (id, conversation, channel, recipient, text, at, repeat, run_model,
                                   next_at, request_key, created_at, updated_at, sources)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (request_key) DO NOTHING RETURNING id
            """,
            (
                secrets.token_hex(3),
                who.conversation,
                who.channel,
                who.recipient,
                text,
                start.isoformat(),
                repeat.strip() if repeat else None,
                int(run_model),
                first.timestamp(),
                request_key,
                stamp,
                stamp,
                json.dumps(sorted(sources), ensure_ascii=False) if sources and run_model else None,
            ),
        )
        found = await self._by_key(request_key)
        assert found is not None
        if row is not None:
            await self._log(who.conversation, f"Reminder {found.id} set for {_when(found.next)}: {text}")
        return found

    async def pending(self, conversation: str) -> list[Reminder]:
        """The conversation's pending reminders, soonest first."""
        rows = await self._db.fetchall(
            "SELECT * FROM reminders WHERE conversation = ? AND status = 'pending' ORDER BY next_at, id",
            (conversation,),
        )
        return [self._reminder(row) for row in rows]

    async def cancel(self, conversation: str, reminder_id: str) -> Reminder:
        """Cancel a pending reminder of this conversation; ``not_found`` for any other id."""
        row = await self._db.fetchone(
            """
            UPDATE reminders SET status = 'cancelled', next_at = NULL, updated_at = ?
            WHERE id = ? AND conversation = ? AND status = 'pending' RETURNING *
            """,
            (now_iso(), reminder_id.strip(), conversation),
        )
        if row is None:
            raise ReminderError(f"There is no pending reminder {reminder_id!r} in this conversation.", "not_found")
        await self._log(conversation, f"Reminder {row['id']} cancelled: {row['text']}")
        return self._reminder(row)

    async def next_due_in(self) -> float | None:
        """Seconds until the next pending occurrence (0 if one is due); None when none is pending."""
        row = await self._db.fetchone("SELECT min(next_at) AS due FROM reminders WHERE status = 'pending'")
        if row is None or row["due"] is None:
            return None
        return max(0.0, row["due"] - self._clock.now_utc().timestamp())

    async def fire_due(self) -> int:
        """Fire every occurrence that is due now; returns how many this call fired."""
        now = self._clock.now_utc()
        rows = await self._db.fetchall(
            "SELECT * FROM reminders WHERE status = 'pending' AND next_at <= ? ORDER BY next_at LIMIT 100",
            (now.timestamp(),),
        )
        fired = 0
        for row in rows:
            fired += await self._fire(row, now)
        return fired

    async def _fire(self, row: Row, now: datetime) -> int:
        tz = self._clock.tz
        due = datetime.fromtimestamp(row["next_at"], UTC).astimezone(tz)
        missed, following = 0, None
        if row["repeat"]:
            rule = parse_rule(row["repeat"], datetime.fromisoformat(row["at"]).astimezone(tz))
            missed = occurrences_between(rule, due, now, tz)
            following = next_after(rule, max(due.astimezone(UTC), now.astimezone(UTC)), tz)
        text = _fired_text(row["text"], due, now, missed)
        key = f"reminder:{row['id']}:{row['next_at']!r}"
        async with self._db.transaction():
            moved = await self._db.execute(
                """
                UPDATE reminders SET next_at = ?, status = ?, fired = fired + 1, updated_at = ?
                WHERE id = ? AND status = 'pending' AND next_at = ?
                """,
                (
                    following.timestamp() if following else None,
                    "pending" if following else "done",
                    now_iso(),
                    row["id"],
                    row["next_at"],
                ),
            )
            if not moved:  # another instance fired it, or it was cancelled meanwhile
                return 0
            if await self._publish(row, text, key, now):  # a task past the day's cap is logged as skipped
                await self._log(row["conversation"], f"Reminder {row['id']} fired: {row['text']}")
        return 1

    async def _publish(self, row: Row, text: str, key: str, now: datetime) -> bool:
        """Send the reminder, or start the scheduled task; False when the task was skipped (the day's cap)."""
        conversation, channel, recipient = row["conversation"], row["channel"], row["recipient"]
        if row["run_model"] and not await self._may_run_model(row, now):
            return False
        if row["run_model"]:
            message = InboundMessage(
                id=key.replace(":", "-"),
                channel=channel,
                conversation=conversation,
                sender=Sender(id=recipient),
                text=text,
                received_at=now,
                reply_to=recipient,
                reminder=Scheduled(id=row["id"], sources=json.loads(row["sources"]) if row["sources"] else []),
            )
            await self._bus.publish(INBOUND, message, conversation=conversation, dedupe_key=key)
            return True
        reply = OutboundMessage(
            channel=channel, conversation=conversation, recipient=recipient, text=f"⏰ {text}", in_reply_to=key
        )
        await self._bus.publish(outbound_topic(channel), reply, conversation=conversation, dedupe_key=key)
        return True

    async def _may_run_model(self, row: Row, now: datetime) -> bool:
        """Count one scheduled task against its conversation's cap for the day; past the cap, it is
        skipped, and the person is told once that day (keyed by conversation and day)."""
        conversation, day = row["conversation"], now.astimezone(self._clock.tz).date().isoformat()
        counted = await self._db.fetchone(
            """
            INSERT INTO scheduled_model_runs (conversation, day, runs) VALUES (?, ?, 1)
            ON CONFLICT (conversation, day) DO UPDATE SET runs = runs + 1
            RETURNING runs
            """,
            (conversation, day),
        )
        assert counted is not None
        if counted["runs"] <= self._model_runs_per_day:
            return True
        cap = self._model_runs_per_day
        said = (
            f"⏰ I skipped the scheduled task “{row['text']}”: scheduled tasks have already run {cap} times in this "
            "chat today, the most a day allows. They go on tomorrow; /reminders lists them, /cancel ID stops one."
        )
        notice = OutboundMessage(
            channel=row["channel"], conversation=conversation, recipient=row["recipient"], text=said, kind="notice"
        )
        topic = outbound_topic(row["channel"])
        await self._bus.publish(topic, notice, conversation=conversation, dedupe_key=f"{conversation}:capped:{day}")
        await self._log(conversation, f"Reminder {row['id']} skipped: {cap} scheduled tasks already ran today")
        return False

    async def _by_key(self, request_key: str) -> Reminder | None:
        row = await self._db.fetchone("SELECT * FROM reminders WHERE request_key = ?", (request_key,))
        return None if row is None else self._reminder(row)

    async def _pending_count(self, conversation: str) -> int:
        row = await self._db.fetchone(
            "SELECT count(*) AS n FROM reminders WHERE conversation = ? AND status = 'pending'", (conversation,)
        )
        return int(row["n"]) if row else 0

    async def _log(self, conversation: str, summary: str) -> None:
        await self._store.add_interaction(conversation=conversation, category="reminder", summary=summary, run_id=None)

    def _reminder(self, row: Row) -> Reminder:
        next_at = row["next_at"]
        return Reminder(
            id=row["id"],
            text=row["text"],
            next=None if next_at is None else datetime.fromtimestamp(next_at, UTC).astimezone(self._clock.tz),
            repeat=row["repeat"],
            run_model=bool(row["run_model"]),
        )


def _when(moment: datetime | None) -> str:
    return moment.isoformat(timespec="seconds") if moment else "never"


def _fired_text(text: str, due: datetime, now: datetime, missed: int) -> str:
    """The scheduled text, and a note when it comes late or stands for several missed occurrences."""
    notes = []
    late = now - due
    if late > LATE_AFTER:
        notes.append(f"due {due.strftime('%Y-%m-%d %H:%M %Z')}, {_duration(late)} late")
    if missed:
        notes.append(f"{missed} more occurrence{'s' if missed > 1 else ''} missed while I was down")
    return text if not notes else f"{text}\n({'; '.join(notes)})"


def _duration(span: timedelta) -> str:
    minutes = int(span.total_seconds() // 60)
    hours, minutes = divmod(minutes, 60)
    if hours >= 48:
        return f"{hours // 24} days"
    return " ".join(part for part in (f"{hours} h" if hours else "", f"{minutes} min" if minutes else "") if part)
