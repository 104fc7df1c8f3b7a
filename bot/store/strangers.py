"""Strangers refused at a bounded cost, on any channel: each is answered at most once a window,
their messages make one ``access_denied`` entry a window that counts them, and past a cap of
strangers in one window the rest are counted together, unanswered.

A flood of messages from one stranger, or from many (an e-mail sender is free to forge), so costs
at most ``most + 1`` entries and ``most`` answers per channel and hour, however long it lasts, and
the person still sees in ``vaultbot log`` who tried and how often. The windows are in the store, so
a restart or a second process does not answer a stranger again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.db import Row, Tx
from bot.store.store import Store

__all__ = ["MOST_STRANGERS", "REFUSAL_WINDOW", "Refusal", "Strangers"]

log = logging.getLogger(__name__)

# A stranger is answered (and logged one by one) at most once in this many seconds.
REFUSAL_WINDOW = 3600.0
# Strangers logged one by one per channel and window; the ones after them are counted together.
MOST_STRANGERS = 100
# The sender of the row that counts every stranger past the cap.
_THE_REST = ""
CATEGORY = "access_denied"


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Refusal:
    """What to do about one message from a stranger. ``first``: the first of this sender in the
    window, logged one by one: a channel that answers strangers answers this one. ``messages``:
    how many this sender (or, past the cap, the strangers counted together) sent in the window."""

    first: bool
    messages: int


class Strangers:
    """The refusals of every channel, on the store."""

    def __init__(
        self,
        store: Store,
        *,
        window: float = REFUSAL_WINDOW,
        most: int = MOST_STRANGERS,
        now: Callable[[], datetime] = _utc_now,
    ) -> None:
        self._store = store
        self._db = store.db
        self._window = window
        self._most = most
        self._now = now

    async def refuse(self, *, channel: str, sender: str, who: str, conversation: str) -> Refusal:
        """Record a message from ``sender`` (an id or address of ``channel``; ``who`` describes them in
        the log: ``Telegram user 666 (Mallory)``) that will not be served."""
        now = self._now().timestamp()
        since = now - self._window
        async with self._db.transaction() as tx:
            known = await _window_of(tx, channel, sender, since)
            if known is not None:
                messages = known["messages"] + 1
                await _count(tx, channel, sender, messages, known["interaction_id"], _summary(who, messages))
                return Refusal(first=False, messages=messages)
            await tx.execute("DELETE FROM refusals WHERE channel = ? AND window_start <= ?", (channel, since))
            row = await tx.fetchone(
                "SELECT count(*) AS n FROM refusals WHERE channel = ? AND sender != ?", (channel, _THE_REST)
            )
            if row is None or row["n"] < self._most:
                await self._open(tx, channel, sender, now, conversation, _summary(who, 1))
                return Refusal(first=True, messages=1)
            rest = await _window_of(tx, channel, _THE_REST, since)
            if rest is not None:
                messages = rest["messages"] + 1
                await _count(tx, channel, _THE_REST, messages, rest["interaction_id"], self._rest(channel, messages))
                return Refusal(first=False, messages=messages)
            log.warning(
                "%s: more than %d strangers wrote within %g s; the rest are counted together and not answered",
                channel,
                self._most,
                self._window,
            )
            await self._open(tx, channel, _THE_REST, now, channel, self._rest(channel, 1))
            return Refusal(first=False, messages=1)

    async def _open(self, tx: Tx, channel: str, sender: str, now: float, conversation: str, summary: str) -> None:
        """A new window for ``sender``: its entry in the interaction log, and the row that counts it."""
        entry = await self._store.add_interaction(
            conversation=conversation, category=CATEGORY, summary=summary, run_id=None
        )
        await tx.execute(
            "INSERT INTO refusals (channel, sender, window_start, messages, interaction_id) VALUES (?, ?, ?, 1, ?)",
            (channel, sender, now, entry),
        )

    def _rest(self, channel: str, messages: int) -> str:
        return (
            f"Refused {_messages(messages)} from more strangers on {channel}: past {self._most} strangers within "
            "an hour, the rest are counted here and not answered"
        )


async def _window_of(tx: Tx, channel: str, sender: str, since: float) -> Row | None:
    return await tx.fetchone(
        "SELECT messages, interaction_id FROM refusals WHERE channel = ? AND sender = ? AND window_start > ?",
        (channel, sender, since),
    )


async def _count(tx: Tx, channel: str, sender: str, messages: int, entry: int, summary: str) -> None:
    """One more message in a window: its count, and the entry in the interaction log that says it."""
    await tx.gather(
        tx.execute("UPDATE refusals SET messages = ? WHERE channel = ? AND sender = ?", (messages, channel, sender)),
        tx.execute("UPDATE interactions SET summary = ? WHERE id = ?", (summary, entry)),
    )


def _summary(who: str, messages: int) -> str:
    counted = f" ({_messages(messages)} within an hour)" if messages > 1 else ""
    return f"Refused {who}: not allowlisted{counted}"


def _messages(n: int) -> str:
    return "1 message" if n == 1 else f"{n} messages"
