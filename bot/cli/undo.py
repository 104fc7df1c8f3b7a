"""``vaultbot undo RUN_ID [--dry-run]``: take back what a run changed in the vault, on the machine.

It is an undo like ``/undo`` in a chat: a run of its own (in the conversation of the run it takes
back, so ``/undo`` there can put it back), with its change set and its entry in the interaction log,
written in one transaction. Run again after being cut short, it finds on disk what it had done.
"""

from __future__ import annotations

import asyncio
import uuid

from bot.settings import Settings
from bot.startup import open_database
from bot.store import ChangeSet, Store, short_id
from bot.undo import NoRun, Report, Undoer, log_line, named, refuse_undone, told
from vault import Vault

__all__ = ["undo"]


async def undo(settings: Settings, given: str, *, dry_run: bool) -> tuple[bool | None, str]:
    """Undo the run ``given`` names; returns whether everything was taken back (False: something was
    left; None: no run could be undone) and what to tell the person."""
    db = await open_database(settings.store.path, write=not dry_run)
    try:
        notes = await asyncio.to_thread(Vault, settings.vault.path, max_staleness=settings.vault.index_staleness)
        try:
            store = Store(db)
            undoer = Undoer(notes, store)
            try:
                target = await named(store, given)
                await refuse_undone(undoer, target, "vaultbot undo")
            except NoRun as exc:
                return None, str(exc)
            report = await undoer.undo(target, dry_run=dry_run)
            if dry_run or not report.changes:
                # Nothing was taken back: no undo to record, so the run stays undoable as it was.
                return report.complete, told(report, None)
            run_id = uuid.uuid4().hex
            await _record(store, undoer, run_id, target, report)
            return report.complete, told(report, f"`vaultbot undo {short_id(run_id)}`")
        finally:
            await asyncio.to_thread(notes.close)
    finally:
        await db.close()


async def _record(store: Store, undoer: Undoer, run_id: str, target: str, report: Report) -> None:
    """The undo as a run of the taken-back run's conversation, with its change set and log entry."""
    run = await undoer.changes.run(target)
    assert run is not None
    changes = ChangeSet()
    undoer.record(report, changes, log_line(report))
    async with store.db.transaction():
        await store.start_run(
            run_id, conversation=run["conversation"], inbound_id=None, model="vaultbot undo", mode="command"
        )
        await store.finish_run(
            run_id,
            status="completed",
            reason=None,
            usage={},
            tools_called=[],
            final_text=told(report, None),
            changes=changes,
        )
