"""Dead letters as a person sees them: the messages the model could not answer, where each was filed,
and whether it was sent again (``vaultbot retry``).

A dead letter's id is the id of the run that filed it (shown by ``vaultbot runs`` and ``vaultbot log``);
a person may give any unique prefix of it (see :mod:`bot.store.run_ids`).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.db import Database, Tx, now_iso
from bot.store.run_ids import MIN_PREFIX, short_id

__all__ = ["DeadLetter", "DeadLetters", "UnknownDeadLetter", "retry_command"]

_COLUMNS = "run_id, message_id, conversation, text, error, path, created_at, retried_at, retry_message_id"


@dataclass(frozen=True)
class DeadLetter:
    """One dead-lettered message: ``path`` is where it was filed (None if that failed too)."""

    run_id: str
    message_id: int
    conversation: str
    text: str
    error: str
    path: str | None
    created_at: str
    retried_at: str | None
    retry_message_id: int | None

    @property
    def short_id(self) -> str:
        """The id as replies and log lines show it."""
        return short_id(self.run_id)


def retry_command(run_id: str) -> str:
    """The command that sends the dead letter filed by ``run_id`` to the model again."""
    return f"vaultbot retry {short_id(run_id)}"


class UnknownDeadLetter(LookupError):
    """An id that names no dead letter waiting for a retry, or more than one; the message says which."""


class DeadLetters:
    """Reads and writes the ``dead_letters`` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def of_message(self, message_id: int) -> DeadLetter | None:
        """The dead letter recorded for bus message ``message_id``, if it was recorded already."""
        row = await self._db.fetchone(f"SELECT {_COLUMNS} FROM dead_letters WHERE message_id = ?", (message_id,))
        return None if row is None else DeadLetter(**dict(row))

    async def add(self, tx: Tx, letter: DeadLetter) -> bool:
        """Record ``letter`` as part of ``tx``; False when its message was recorded already (a re-run)."""
        changed = await tx.execute(
            f"INSERT INTO dead_letters ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (message_id) DO NOTHING",
            (
                letter.run_id,
                letter.message_id,
                letter.conversation,
                letter.text,
                letter.error,
                letter.path,
                letter.created_at,
                letter.retried_at,
                letter.retry_message_id,
            ),
        )
        return changed > 0

    async def waiting(self, *, limit: int = 1000) -> list[DeadLetter]:
        """The dead letters not yet sent again, oldest first."""
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM dead_letters WHERE retried_at IS NULL ORDER BY created_at LIMIT ?", (limit,)
        )
        return [DeadLetter(**dict(row)) for row in rows]

    async def find(self, prefix: str) -> DeadLetter:
        """The one waiting dead letter whose id starts with ``prefix``; :class:`UnknownDeadLetter` otherwise."""
        prefix = prefix.strip().lower()
        if len(prefix) < MIN_PREFIX:
            raise UnknownDeadLetter(f"{prefix!r} is too short: give at least {MIN_PREFIX} characters of the id")
        # Ids are hex: a prefix with LIKE's wildcards in it matches nothing, as it should.
        rows = await self._db.fetchall(
            f"SELECT {_COLUMNS} FROM dead_letters WHERE substr(run_id, 1, ?) = ? LIMIT 2", (len(prefix), prefix)
        )
        if not rows:
            raise UnknownDeadLetter(f"no dead-lettered message has the id {prefix!r} (see `vaultbot log`)")
        if len(rows) > 1:
            raise UnknownDeadLetter(f"{prefix!r} names more than one dead-lettered message: give more of its id")
        letter = DeadLetter(**dict(rows[0]))
        if letter.retried_at is not None:
            raise UnknownDeadLetter(f"the message {prefix!r} was already sent again, at {letter.retried_at}")
        return letter

    async def mark_retried(self, tx: Tx, run_id: str, retry_message_id: int) -> bool:
        """Record, as part of ``tx``, that the dead letter ``run_id`` was sent again as ``retry_message_id``;
        False when it already was."""
        changed = await tx.execute(
            "UPDATE dead_letters SET retried_at = ?, retry_message_id = ? WHERE run_id = ? AND retried_at IS NULL",
            (now_iso(), retry_message_id, run_id),
        )
        return changed > 0

    async def message(self, letter: DeadLetter) -> str:
        """The dead-lettered message as the bus kept it (JSON of the inbound message)."""
        row = await self._db.fetchone("SELECT payload FROM bus_messages WHERE id = ?", (letter.message_id,))
        assert row is not None  # bus messages are never deleted
        return str(row["payload"])
