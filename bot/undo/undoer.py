"""Taking back a run: which of its changes, in which order, and what is left and why.

The vault takes each change back only while its file is as the run left it (:mod:`vault.takeback`);
this decides the rest. Changes go back newest first, so a note created and then appended to in one
run is first cut back, then moved to the trash. The files a message brought (a photo, a recording)
go last, and stay when another message brought the same file or when a note left in place links
them. Run again after a crash, an undo finds what it had already done on disk and says so once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from bot.store import Changes, ChangeSet, Store, short_id
from vault import Change, Outcome, Vault, VaultError

__all__ = ["Item", "Report", "Undoer"]


@dataclass(frozen=True)
class Item:
    """One change of the run and what taking it back did (or, on a dry run, would do)."""

    change: Change
    outcome: Outcome

    @property
    def taken_back(self) -> bool:
        """Undone now, or already as it was before."""
        return self.outcome.status != "left"


@dataclass
class Report:
    """What an undo of ``run_id`` did; ``undid`` is the run ``run_id`` itself took back, when it is an undo."""

    run_id: str
    items: list[Item] = field(default_factory=list)
    undid: str | None = None
    dry_run: bool = False

    @property
    def complete(self) -> bool:
        """Everything was taken back (nothing left because it changed since)."""
        return all(item.taken_back for item in self.items)

    @property
    def changes(self) -> list[Change]:
        """The changes taking back made: the undo's own change set."""
        return [item.outcome.change for item in self.items if item.outcome.change is not None]


class Undoer:
    """Takes runs back in one vault, with the change sets kept in one store."""

    def __init__(self, notes: Vault, store: Store) -> None:
        self._notes = notes
        self._store = store
        self.changes = Changes(store.db)

    async def undo(self, run_id: str, *, dry_run: bool = False) -> Report:
        """Take back what ``run_id`` changed (``dry_run``: only find out what would be)."""
        report = Report(run_id, undid=await self.changes.undid(run_id), dry_run=dry_run)
        # A run an earlier undo took back in part: what that undo took back stays as it is.
        taken = await self.taken_back(run_id)
        recorded = [change for change in await self.changes.of_run(run_id) if change.path not in taken]
        for change in reversed([c for c in recorded if c.kind != "attachment"]):
            report.items.append(await self._take_back(run_id, change, dry_run))
        left = [item.change.path for item in report.items if not item.taken_back]
        # A message's attempts each list the files it brought: each file is taken back once.
        for change in {c.path: c for c in recorded if c.kind == "attachment"}.values():
            report.items.append(await self._attachment(run_id, change, left, dry_run))
        if not dry_run and report.changes:
            # The index forgets the notes moved to the trash now, not at its next look at the disk.
            await asyncio.to_thread(self._notes.sync)
        return report

    async def taken_back(self, run_id: str) -> set[str]:
        """The paths of ``run_id``'s changes that its undos still in force took back."""
        return {
            change.path
            for undo in await self.changes.active_undos(run_id)
            for change in await self.changes.of_run(undo)
        }

    def record(self, report: Report, into: ChangeSet, summary: str) -> None:
        """Put what ``report``'s undo changed into ``into``, the undo run's change set, with its log line."""
        into.changes.extend(report.changes)
        into.undoes = report.run_id
        into.summary = summary

    async def _take_back(self, run_id: str, change: Change, dry_run: bool) -> Item:
        outcome = await asyncio.to_thread(self._notes.take_back, change, dry_run=dry_run)
        if outcome.current is not None:
            later = await self.changes.made_by(change.path, outcome.current, besides=run_id)
            if later is not None:
                reason = f"{outcome.reason}, by run {short_id(later)}"
                outcome = Outcome(outcome.status, outcome.change, reason, outcome.current)
        return Item(change, outcome)

    async def _attachment(self, run_id: str, change: Change, left: list[str], dry_run: bool) -> Item:
        other = await self.changes.also_brought(change.path, run_id)
        if other is not None:
            return Item(change, Outcome("left", reason=f"it came with another message too (run {short_id(other)})"))
        linking = [path for path in left if await self._links(path, change.path)]
        if linking:
            return Item(change, Outcome("left", reason=f"{linking[0]}, left as it is, links it"))
        return await self._take_back(run_id, change, dry_run)

    async def _links(self, note: str, attachment: str) -> bool:
        """Whether the note at ``note`` names the file at ``attachment`` (by its path or its name)."""
        try:
            found = await asyncio.to_thread(self._notes.read, note)
        except (VaultError, OSError):
            return False
        name = attachment.rsplit("/", 1)[-1]
        return attachment in found.content or name in found.content
