"""``/undo`` in a chat: ``/undo`` takes back the chat's latest run that changed the vault (again: the
one before), ``/undo RUN_ID`` the run whose id starts so (an undo's id: put back what it took back)."""

from __future__ import annotations

from bot.store import ChangeSet, Store, short_id
from bot.undo.naming import NoRun, latest, named, refuse_undone
from bot.undo.undoer import Undoer
from bot.undo.words import log_line, told

__all__ = ["undo_in_chat"]


async def undo_in_chat(
    undoer: Undoer, store: Store, args: str, *, conversation: str, run_id: str, into: ChangeSet
) -> str:
    """Undo what ``args`` names in ``conversation`` as run ``run_id``, whose change set ``into`` gets
    what the undo changed; returns the reply."""
    try:
        target = (
            await named(store, args, conversation=conversation) if args.strip() else await latest(undoer, conversation)
        )
        await refuse_undone(undoer, target, "/undo")
    except NoRun as exc:
        return str(exc)
    report = await undoer.undo(target)
    if report.changes:  # an undo that took nothing back is not recorded: the run stays undoable
        undoer.record(report, into, log_line(report))
    return told(report, f"`/undo {short_id(run_id)}`")
