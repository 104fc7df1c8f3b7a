"""``vaultbot retry``: dead-lettered messages sent to the model again, each answered as if it had just arrived.

Each message goes back on the inbound topic as a new message (a new id, so its replies and its turn in
history are its own), carrying when it first arrived and where it was filed then
(:class:`~bot.bus.Retried`). A running ``vaultbot run`` picks it up as it does any message; this
command runs a runner worker too and waits until each one is answered or dead-lettered again, so it
works as well when nothing else is running. Two workers on one bus never handle a message twice.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from bot.bus import INBOUND, InboundMessage, Retried
from bot.startup import open_database
from bot.store import DeadLetter, DeadLetters

if TYPE_CHECKING:
    from bot.app import App

__all__ = ["NothingToRetry", "nothing_waiting", "retry"]

# How often the command looks again at a message another process (`vaultbot run`) is handling.
_RECHECK_SECONDS = 0.5
_TEXT_SHOWN = 60


class NothingToRetry(LookupError):
    """No dead-lettered message is waiting to be sent again."""

    def __init__(self) -> None:
        super().__init__("Nothing to retry: no dead-lettered message is waiting.")


async def nothing_waiting(store: Path) -> bool:
    """Whether no dead letter waits in the store at ``store``: asked before the app (the model, the
    vault, the MCP servers) is opened, which a retry of nothing has no use for."""
    db = await open_database(store, write=False)
    try:
        return not await DeadLetters(db).waiting(limit=1)
    finally:
        await db.close()


@dataclass(frozen=True)
class _Sent:
    letter: DeadLetter
    message_id: int


async def retry(app: App, ids: list[str], out: TextIO) -> bool:
    """Send the dead letters named by ``ids`` (unique prefixes; all waiting ones when empty) to the
    model again and report on ``out`` what became of each; True when every one was answered.

    Raises :class:`~bot.store.UnknownDeadLetter` for an id that names none (before anything is sent) and
    :class:`NothingToRetry` when there is nothing to send."""
    letters = DeadLetters(app.db)
    chosen = [await letters.find(i) for i in dict.fromkeys(ids)] if ids else await letters.waiting()
    if not chosen:
        raise NothingToRetry
    worker = app.runner_worker()
    working = asyncio.create_task(worker.run())
    try:
        sent = [s for letter in chosen if (s := await _send_again(app, letters, letter)) is not None]
        for each in sent:
            print(f"Sending {each.letter.short_id} again: {_cut(each.letter.text)}", file=out, flush=True)
        answered = [await _report(app, letters, each, working, out) for each in sent]
    finally:
        await worker.stop()
        await working
    return all(answered)


async def _send_again(app: App, letters: DeadLetters, letter: DeadLetter) -> _Sent | None:
    """Publish ``letter``'s message again and mark it sent, in one transaction; None when another
    ``vaultbot retry`` sent it first."""
    original = InboundMessage.model_validate_json(await letters.message(letter))
    first = original.retry.first_received_at if original.retry else original.received_at
    again = original.model_copy(
        update={
            "id": uuid.uuid4().hex,
            "received_at": datetime.now(UTC),
            "retry": Retried(first_received_at=first, filed=letter.path),
        }
    )
    async with app.db.transaction() as tx:
        published = await app.bus.publish(
            INBOUND, again, conversation=original.conversation, dedupe_key=f"retry:{letter.run_id}"
        )
        if not await letters.mark_retried(tx, letter.run_id, published.id):
            return None
    return _Sent(letter, published.id)


async def _report(app: App, letters: DeadLetters, sent: _Sent, working: asyncio.Task[None], out: TextIO) -> bool:
    """Wait until ``sent`` is answered or dead-lettered again (by this worker or another process's),
    then say which."""
    status = await _settled(app, sent.message_id, working)
    short = sent.letter.short_id
    if status == "done":
        print(f"{short}: answered; the reply goes to {sent.letter.conversation}.", file=out, flush=True)
        return True
    again = await letters.of_message(sent.message_id)
    if again is None:
        print(f"{short}: not answered again; see `vaultbot log`.", file=out, flush=True)
    else:
        where = f"it is still in your vault as {again.path}" if again.path else "it could not be filed"
        print(
            f"{short}: not answered again ({again.error}); {where}. `vaultbot retry {again.short_id}` tries once more.",
            file=out,
            flush=True,
        )
    return False


async def _settled(app: App, message_id: int, working: asyncio.Task[None]) -> str:
    """The message's final status, ``done`` or ``dead``; the worker's error if it stopped meanwhile."""
    while True:
        status = await app.bus.status(message_id)
        if status in ("done", "dead"):
            return status
        if working.done():
            working.result()  # the worker's error (a corrupt store) is raised, not waited on forever
            raise RuntimeError("the runner worker stopped before the message was handled")
        # This process's worker announces its progress; another process's is seen on the next look.
        await app.bus.wait(INBOUND, timeout=_RECHECK_SECONDS)


def _cut(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _TEXT_SHOWN else line[: _TEXT_SHOWN - 1] + "…"
