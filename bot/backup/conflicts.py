"""Conflict copies a sync tool leaves in the vault, said once in chat: to the conversation that last
wrote to the bot, as a notice naming each new copy and the note it belongs beside.

The vault is looked at by name only (a walk, no note read), once a minute; a copy told of is kept in
``sync_conflicts_told`` in the transaction that queues the notice, so each is said once across
restarts. Git's conflict markers inside notes are listed by ``vaultbot doctor``, which reads them.
"""

from __future__ import annotations

import asyncio
import hashlib

from bot.bus import INBOUND, Bus, InboundMessage, OutboundMessage, outbound_topic
from bot.db import Database, now_iso
from vault import Vault, find_conflicts

__all__ = ["ConflictNotices"]


class ConflictNotices:
    """Tells the person of new conflict copies in ``notes``' vault, until :meth:`stop`."""

    def __init__(self, db: Database, bus: Bus, notes: Vault, *, poll_interval: float = 60.0) -> None:
        self._db = db
        self._bus = bus
        self._root = notes.root
        self._poll = poll_interval
        self._wake = asyncio.Event()
        self._stopping = False

    async def run(self) -> None:
        """Look now and then once a ``poll_interval``."""
        while not self._stopping:
            await self.tell_new()
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), self._poll)
            except TimeoutError:
                pass

    async def tell_new(self) -> list[str]:
        """Queue one notice naming the conflict copies not told of yet; returns their paths (none
        while nobody has written to the bot: there is no one to tell yet)."""
        found = [c.path for c in await asyncio.to_thread(find_conflicts, self._root, markers=False)]
        if not found:
            return []
        told = {row["path"] for row in await self._db.fetchall("SELECT path FROM sync_conflicts_told")}
        new = [path for path in found if path not in told]
        last = await self._db.fetchone(
            "SELECT payload FROM bus_messages WHERE topic = ? ORDER BY id DESC LIMIT 1", (INBOUND,)
        )
        if not new or last is None:
            return []
        person = InboundMessage.model_validate_json(last["payload"])
        notice = OutboundMessage(
            channel=person.channel,
            conversation=person.conversation,
            recipient=person.recipient,
            text=_said(new),
            kind="notice",
        )
        key = "sync-conflicts:" + hashlib.sha256("\n".join(new).encode()).hexdigest()[:32]
        async with self._db.transaction():
            topic = outbound_topic(person.channel)
            await self._bus.publish(topic, notice, conversation=person.conversation, dedupe_key=key)
            await self._db.executemany(
                "INSERT OR IGNORE INTO sync_conflicts_told (path, told_at) VALUES (?, ?)", [(p, now_iso()) for p in new]
            )
        return new

    async def stop(self, grace: float = 0.0) -> None:
        """Stop looking (``grace`` is accepted so it stops like a worker)."""
        self._stopping = True
        self._wake.set()


def _said(paths: list[str]) -> str:
    listed = "\n".join(f"• {path}" for path in paths[:20])
    more = f"\n…and {len(paths) - 20} more (`vaultbot doctor` lists them all)." if len(paths) > 20 else ""
    return (
        "Your sync tool left conflict copies: two devices changed the same note. They are not searched as notes "
        f"of their own; merge each into its note and delete it:\n{listed}{more}"
    )
