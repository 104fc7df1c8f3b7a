"""The durable bus: topics of JSON messages in SQLite, claimed with a lease.

A message is ``pending`` until a worker claims it (``leased``, ``attempts`` + 1), then ``done``
(ack), ``pending`` again later (nack), or ``dead``. A lease that runs out without an ack makes the
message claimable again, which is how a crashed worker's message is redelivered. Only the oldest
unfinished message of a conversation is ever claimable (see ``bus_heads`` in the migrations),
so a conversation is handled in order, one message at a time, while others proceed in parallel.

Publishing, acking and nacking wake this process's listeners of the topic once the change is
committed (at once, or when the transaction it is part of commits; not at all if that rolls back);
other processes see the change on their next poll.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from bot.db import Database, now_iso

__all__ = ["Bus", "Delivery", "LeaseLost", "Publication", "Published"]

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Published:
    """The bus id of a published message; ``duplicate`` when its dedupe key was already there."""

    id: int
    duplicate: bool


@dataclass(frozen=True)
class Publication:
    """A message to publish, as :meth:`Bus.publish` takes it."""

    topic: str
    message: BaseModel
    conversation: str
    dedupe_key: str | None = None
    delay: float = 0.0
    # The message as stored, encoded where the publication is made.
    payload: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "payload", self.message.model_dump_json())


class LeaseLost(RuntimeError):
    """The message was claimed again while its handler was paused past its lease: the claim that
    holds it now answers it, and this one must make no more effects or records."""


@dataclass(frozen=True)
class Delivery:
    """A claimed message. ``attempts`` counts this claim; ``lease`` is how long it was leased for."""

    id: int
    topic: str
    conversation: str
    payload: str
    attempts: int
    lease: float = 0.0

    def parse(self, model: type[M]) -> M:
        """The payload as the typed message it was published as."""
        return model.model_validate_json(self.payload)


class Bus:
    """Publish, claim, ack, nack and dead-letter messages on one database."""

    def __init__(self, db: Database, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock
        self._listeners: defaultdict[str | None, set[asyncio.Event]] = defaultdict(set)

    async def publish(
        self,
        topic: str,
        message: BaseModel,
        *,
        conversation: str,
        dedupe_key: str | None = None,
        delay: float = 0.0,
    ) -> Published:
        """Store ``message`` on ``topic``; a second publish with the same dedupe key is a no-op."""
        return await self.put(Publication(topic, message, conversation, dedupe_key, delay))

    async def put(self, publication: Publication) -> Published:
        """:meth:`publish` a publication made beforehand (a reply, a notice), e.g. inside the
        transaction that records the rest of a turn."""
        now = now_iso()
        row = await self._db.fetchone(
            """
            INSERT INTO bus_messages
                (topic, conversation, dedupe_key, payload, available_at, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (topic, dedupe_key) DO NOTHING
            RETURNING id
            """,
            (
                publication.topic,
                publication.conversation,
                publication.dedupe_key,
                publication.payload,
                self._clock() + publication.delay,
                now,
                now,
            ),
        )
        if row is not None:
            self.announce(publication.topic)
            return Published(row["id"], duplicate=False)
        row = await self._db.fetchone(
            "SELECT id FROM bus_messages WHERE topic = ? AND dedupe_key = ?",
            (publication.topic, publication.dedupe_key),
        )
        assert row is not None  # the conflicting row exists: rows are never deleted
        return Published(row["id"], duplicate=True)

    async def claim(
        self, topic: str, *, owner: str, lease: float, limit: int = 1, conversation: str | None = None
    ) -> list[Delivery]:
        """Lease up to ``limit`` due messages of ``topic``, at most one per conversation; with
        ``conversation``, only that conversation's (a terminal prints only its own replies)."""
        now = self._clock()
        rows = await self._db.fetchall(
            """
            UPDATE bus_messages
            SET status = 'leased', attempts = attempts + 1, lease_until = :until,
                owner = :owner, updated_at = :iso
            WHERE id IN (
                SELECT head_id FROM bus_heads
                WHERE topic = :topic AND (:conversation IS NULL OR conversation = :conversation) AND due <= :now
                ORDER BY due LIMIT :limit
            )
            RETURNING id, topic, conversation, payload, attempts
            """,
            {
                "until": now + lease,
                "owner": owner,
                "iso": now_iso(),
                "topic": topic,
                "conversation": conversation,
                "now": now,
                "limit": limit,
            },
        )
        return sorted((Delivery(**dict(row), lease=lease) for row in rows), key=lambda d: d.id)

    async def hold_group(self, topic: str, conversation: str, group: str, delay: float) -> None:
        """Keep the pending messages of ``group`` (their payload's ``group``) in ``conversation`` from
        being claimed for ``delay`` seconds from now: another part of the group has arrived, and the
        parts are handled together once none has come for that long."""
        await self._db.execute(
            "UPDATE bus_messages SET available_at = max(available_at, ?) "
            "WHERE topic = ? AND conversation = ? AND status = 'pending' AND json_extract(payload, '$.group') = ?",
            (self._clock() + delay, topic, conversation, group),
        )

    async def group(self, topic: str, conversation: str, group: str) -> list[Delivery]:
        """The pending messages of ``group`` in ``conversation``, oldest first, unclaimed: the rest of a
        group whose first message a handler holds, to be acked with it (``ack_in``)."""
        rows = await self._db.fetchall(
            "SELECT id, topic, conversation, payload, attempts FROM bus_messages "
            "WHERE topic = ? AND conversation = ? AND status = 'pending' AND json_extract(payload, '$.group') = ? "
            "ORDER BY id",
            (topic, conversation, group),
        )
        return [Delivery(**dict(row)) for row in rows]

    # Settling and renewing are fenced by the claim's attempt (``attempt``): a handler paused past its
    # lease (a stopped process, a long GC) must not settle or renew the message once it is claimed again.

    async def ack(self, message_id: int, *, attempt: int | None = None) -> bool:
        """Mark a leased message done; False if it was not leased (already acked, or dead), or was
        claimed again since the claim ``attempt``."""
        return await self._finish(message_id, "done", None, attempt)

    async def dead(self, message_id: int, error: str, *, attempt: int | None = None) -> bool:
        """Dead-letter a message: it is kept, with ``error``, and never delivered again."""
        return await self._finish(message_id, "dead", error, attempt)

    async def nack(
        self, message_id: int, *, delay: float = 0.0, error: str | None = None, attempt: int | None = None
    ) -> bool:
        """Give a leased message back, to be delivered again after ``delay`` seconds."""
        row = await self._db.fetchone(
            """
            UPDATE bus_messages
            SET status = 'pending', available_at = ?, lease_until = NULL, owner = NULL,
                last_error = coalesce(?, last_error), updated_at = ?
            WHERE id = ? AND status = 'leased' AND (? IS NULL OR attempts = ?)
            RETURNING topic
            """,
            (self._clock() + delay, error, now_iso(), message_id, attempt, attempt),
        )
        if row is not None:
            self.announce(row["topic"])
        return row is not None

    async def extend(self, message_id: int, lease: float, *, attempt: int | None = None) -> bool:
        """Push a leased message's lease ``lease`` seconds from now (a heartbeat); False when it is
        not leased, or was claimed again since the claim ``attempt``."""
        changed = await self._db.execute(
            "UPDATE bus_messages SET lease_until = ? "
            "WHERE id = ? AND status = 'leased' AND (? IS NULL OR attempts = ?)",
            (self._clock() + lease, message_id, attempt, attempt),
        )
        return changed > 0

    async def renew(self, delivery: Delivery) -> None:
        """Renew ``delivery``'s lease for as long as it was claimed, or raise :class:`LeaseLost` when
        it was claimed again since: checked before a handler makes an effect outside the store (an MCP
        call, a fetch), which a claim that lost its lease must not make a second time."""
        if not await self.extend(delivery.id, delivery.lease, attempt=delivery.attempts):
            raise LeaseLost(f"message {delivery.id} was claimed again since attempt {delivery.attempts}")

    async def _finish(self, message_id: int, status: str, error: str | None, attempt: int | None) -> bool:
        """Mark a pending or leased message ``status``; False if it was neither, or was claimed again
        since the claim ``attempt``."""
        row = await self._db.fetchone(
            """
            UPDATE bus_messages
            SET status = ?, lease_until = NULL, last_error = coalesce(?, last_error), updated_at = ?
            WHERE id = ? AND status IN ('pending', 'leased') AND (? IS NULL OR attempts = ?)
            RETURNING topic
            """,
            (status, error, now_iso(), message_id, attempt, attempt),
        )
        if row is not None:
            self.announce(row["topic"])
        return row is not None

    async def progress(self, message_id: int) -> int:
        """How many parts of a message its handler recorded as done (0 at first)."""
        row = await self._db.fetchone("SELECT done FROM bus_progress WHERE message_id = ?", (message_id,))
        return 0 if row is None else int(row["done"])

    async def set_progress(self, message_id: int, done: int) -> None:
        """Record that the first ``done`` parts of a message are done, so a retry skips them."""
        await self._db.execute(
            "INSERT INTO bus_progress (message_id, done, updated_at) VALUES (?, ?, ?) "
            "ON CONFLICT (message_id) DO UPDATE SET done = excluded.done, updated_at = excluded.updated_at",
            (message_id, done, now_iso()),
        )

    async def status(self, message_id: int) -> str | None:
        """``pending``, ``leased``, ``done`` or ``dead``; None for an unknown id."""
        row = await self._db.fetchone("SELECT status FROM bus_messages WHERE id = ?", (message_id,))
        return None if row is None else row["status"]

    async def unfinished(self, topic: str, conversation: str) -> int:
        """How many messages of one conversation on ``topic`` are pending or leased."""
        row = await self._db.fetchone(
            "SELECT count(*) AS n FROM bus_messages "
            "WHERE topic = ? AND conversation = ? AND status IN ('pending', 'leased')",
            (topic, conversation),
        )
        return int(row["n"]) if row else 0

    async def next_due_in(self, topic: str, conversation: str | None = None) -> float | None:
        """Seconds until a message of ``topic`` (of ``conversation``, if given) becomes claimable (0
        if one is); None if none waits."""
        row = await self._db.fetchone(
            "SELECT min(due) AS due FROM bus_heads WHERE topic = ? AND (? IS NULL OR conversation = ?)",
            (topic, conversation, conversation),
        )
        if row is None or row["due"] is None:
            return None
        return max(0.0, row["due"] - self._clock())

    async def counts(self, topic: str | None = None) -> dict[str, int]:
        """Messages per status, on one topic or all."""
        rows = await self._db.fetchall(
            "SELECT status, count(*) AS n FROM bus_messages WHERE ? IS NULL OR topic = ? GROUP BY status",
            (topic, topic),
        )
        return {row["status"]: row["n"] for row in rows}

    async def dead_letters(self, topic: str | None = None, *, limit: int = 100) -> list[dict[str, Any]]:
        """Dead-lettered messages, newest first, with their last error."""
        rows = await self._db.fetchall(
            """
            SELECT id, topic, conversation, payload, attempts, last_error, updated_at
            FROM bus_messages WHERE status = 'dead' AND (? IS NULL OR topic = ?)
            ORDER BY id DESC LIMIT ?
            """,
            (topic, topic, limit),
        )
        return [dict(row) for row in rows]

    @contextmanager
    def listen(self, topic: str | None = None, event: asyncio.Event | None = None) -> Iterator[asyncio.Event]:
        """An event set whenever ``topic`` (any topic for None) changes in this process: ``event``,
        for a waiter that other things wake too, else a new one.

        Register before checking the bus, then wait on the event: a change between the check and
        the wait still wakes the waiter.
        """
        event = asyncio.Event() if event is None else event
        self._listeners[topic].add(event)
        try:
            yield event
        finally:
            self._listeners[topic].discard(event)

    async def wait(self, topic: str | None = None, *, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a change on ``topic``; True if one came."""
        with self.listen(topic) as changed:
            try:
                await asyncio.wait_for(changed.wait(), timeout)
            except TimeoutError:
                return False
            return True

    def announce(self, topic: str) -> None:
        """Wake this process's listeners of ``topic`` once what this task wrote is committed: it changed."""
        self._db.after_commit(lambda: self._wake(topic))

    def _wake(self, topic: str) -> None:
        for event in (*self._listeners.get(topic, ()), *self._listeners.get(None, ())):
            event.set()
