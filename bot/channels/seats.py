"""Which conversation a ``vaultbot chat`` is, when several are open on one store at once.

Each terminal is its own conversation, so two chats never print each other's replies and ``/new``
in one leaves the other's history alone. A chat takes the lowest free *seat*: the first is
``terminal:USER`` (the conversation a single chat always was), a second one open at the same time
``terminal:USER:2``, and so on. A seat is held by an exclusive lock on a small file beside the
store (``vaultbot.db.terminal-2.lock``), which the system releases when the process ends however it
ends, so the next chat takes the seat at once, with its history and any replies it never printed.
"""

from __future__ import annotations

import asyncio
import getpass
import os
from dataclasses import dataclass
from pathlib import Path

from bot.channels.conversations import conversation_id

try:
    import fcntl
except ImportError:  # Windows: no locks to hold, so every chat is the first seat, as before.
    fcntl = None  # type: ignore[assignment]

__all__ = ["Seat", "conversation_of", "take_seat", "whoami"]

CHANNEL = "terminal"
# More chats than this at once on one store is a mistake, not a use: stop looking.
_MOST = 64


@dataclass
class Seat:
    """A held seat: its number, its conversation, and the lock that holds it (None without locks)."""

    number: int
    user: str
    _fd: int | None = None

    @property
    def conversation(self) -> str:
        """``terminal:USER`` for the first seat, ``terminal:USER:N`` for seat N."""
        return conversation_of(self.user, self.number)

    def release(self) -> None:
        """Give the seat up; the next chat to start may take it."""
        if self._fd is not None:
            os.close(self._fd)  # closing the file drops its lock
            self._fd = None


def conversation_of(user: str, number: int) -> str:
    """The conversation of seat ``number``: ``terminal:ann``, then ``terminal:ann:2``, …"""
    return conversation_id(CHANNEL, user) if number == 1 else conversation_id(CHANNEL, user, number)


async def take_seat(store: Path, user: str | None = None) -> Seat:
    """Hold the lowest seat no running chat on ``store`` holds, for ``user`` (default: who runs this)."""
    return await asyncio.to_thread(_take, store, user or whoami())


def _take(store: Path, user: str) -> Seat:
    if fcntl is None:
        return Seat(1, user)
    for number in range(1, _MOST + 1):
        fd = os.open(f"{store}.{CHANNEL}-{number}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if isinstance(exc, BlockingIOError):
                continue  # another chat holds this seat
            raise
        return Seat(number, user, fd)
    raise RuntimeError(f"{_MOST} chats are already open on {store}")


def whoami() -> str:
    """The name of the person at this terminal (``me`` when the system cannot say)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "me"
