"""Which run an undo takes back: the one named by a start of its id, or the chat's latest."""

from __future__ import annotations

from bot.store import MIN_PREFIX, Store, short_id
from bot.undo.undoer import Undoer

__all__ = ["NoRun", "latest", "named", "refuse_undone"]


class NoRun(LookupError):
    """No run answers: the message says why, in words for the person who asked."""


async def named(store: Store, given: str, *, conversation: str | None = None) -> str:
    """The id of the one run whose id starts with ``given`` (of ``conversation`` only, when given)."""
    prefix = given.strip().lower()
    if len(prefix) < MIN_PREFIX:
        raise NoRun(f"{given.strip()!r} is too short to name a run: give at least {MIN_PREFIX} characters of its id.")
    found = [
        run
        for run in await store.runs_starting_with(prefix)
        if conversation is None or run["conversation"] == conversation
    ]
    if not found:
        where = " in this chat" if conversation is not None else ""
        raise NoRun(f"No run{where} has an id starting with {prefix!r}.")
    if len(found) > 1:
        ids = ", ".join(run["id"] for run in found)
        raise NoRun(f"{prefix!r} is the start of {len(found)} run ids ({ids}); give more characters.")
    return str(found[0]["id"])


async def latest(undoer: Undoer, conversation: str) -> str:
    """The chat's latest run that changed the vault and is not undone (nor an undo): what a bare
    ``/undo`` takes back, so each one goes a run further back."""
    found = await undoer.changes.latest_to_undo(conversation)
    if found is None:
        raise NoRun("Nothing to undo: no earlier run of this chat changed the vault (or it is undone already).")
    return found


async def refuse_undone(undoer: Undoer, run_id: str, again: str) -> None:
    """Raise :class:`NoRun` when ``run_id`` is undone already, naming the command (``again`` + the
    undo's id) that puts it back. A run an undo took back only in part (a note edited since was left)
    stays undoable: once the edit is gone, undoing it again takes back the rest."""
    by = await undoer.changes.undone_by(run_id)
    if by is not None and not await _left_by_undos(undoer, run_id):
        raise NoRun(
            f"Run {short_id(run_id)} is already undone, by run {short_id(by)}: `{again} {short_id(by)}` puts it back."
        )


async def _left_by_undos(undoer: Undoer, run_id: str) -> bool:
    """Whether some file ``run_id`` changed was taken back by none of its undos still in force."""
    changed = {change.path for change in await undoer.changes.of_run(run_id)}
    return bool(changed - await undoer.taken_back(run_id))
