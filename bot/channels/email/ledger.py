"""The channel's record of every mail it took from the mailbox (the ``email_mails`` table).

A mail is taken once: stored on the bus, or refused and logged, or passed over as automatic mail, in the
same transaction as its row here, and only then marked ``\\Seen``. A crash before the flag finds the row
on the next start, and the mail is flagged without being handled twice. A published mail's row also
keeps its thread, which its replies join.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.db import Database, now_iso


@dataclass(frozen=True)
class Thread:
    """What a reply needs to join a mail's thread."""

    message_id: str | None
    references: list[str]
    subject: str


class Ledger:
    """Reads and writes ``email_mails``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def taken(self, key: str) -> bool:
        """Whether the mail with this dedupe key was taken before."""
        return await self._db.fetchone("SELECT 1 FROM email_mails WHERE key = ?", (key,)) is not None

    async def record(
        self,
        key: str,
        outcome: str,
        conversation: str,
        *,
        inbound_id: str | None = None,
        message_id: str | None = None,
        references: list[str] | None = None,
        subject: str = "",
    ) -> bool:
        """Record a mail as taken; False if it was already (the caller's transaction then undoes nothing
        it must keep: whatever else it wrote is deduped too)."""
        changed = await self._db.execute(
            "INSERT INTO email_mails (key, outcome, conversation, inbound_id, message_id, refs, subject, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING",
            (key, outcome, conversation, inbound_id, message_id, " ".join(references or []), subject, now_iso()),
        )
        return changed > 0

    async def thread(self, inbound_id: str | None, conversation: str) -> Thread | None:
        """The thread of the mail that became inbound message ``inbound_id``; else (a reminder, a retried
        message, a run's notice) the latest mail of the conversation; None when it has none."""
        row = None
        if inbound_id is not None:
            row = await self._db.fetchone(
                "SELECT message_id, refs, subject FROM email_mails WHERE inbound_id = ?", (inbound_id,)
            )
        if row is None:
            row = await self._db.fetchone(
                "SELECT message_id, refs, subject FROM email_mails WHERE conversation = ? AND outcome = 'published' "
                "ORDER BY created_at DESC, rowid DESC LIMIT 1",
                (conversation,),
            )
        if row is None:
            return None
        return Thread(row["message_id"], row["refs"].split(), row["subject"])
