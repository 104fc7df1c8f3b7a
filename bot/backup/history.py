"""The vault's git history (``VAULTBOT_VAULT__GIT=true`` in a vault that is a git repository): each
run that changed notes becomes one commit, its message the run's id and summary, in the order the
runs finished; a run that changed nothing makes none, and nothing is ever pushed. Undo stays the
way to take a run back (its own run, so its own commit).

It follows the store rather than the runs: a loop beside the workers commits every finished run with
changes not yet in ``git_history``, so no run waits on git, and a crash between a commit and its
record only means the run is looked at again and found with nothing new to commit. The runs that
finished before git mode was first on are passed over, not committed in a heap.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

from bot.db import Database, now_iso
from vault.git import GitError, commit_notes, is_repository

__all__ = ["GitHistory"]

log = logging.getLogger(__name__)
_SUMMARY_CHARS = 200


class GitHistory:
    """Commits each finished run's changed notes in the vault at ``root``, until :meth:`stop`."""

    def __init__(self, db: Database, root: Path, *, poll_interval: float = 1.0) -> None:
        self._db = db
        self._root = root
        self._poll = poll_interval
        self._wake = asyncio.Event()
        self._stopping = False

    async def run(self) -> None:
        """Commit runs as they finish; a vault that is not a repository is said once and left alone."""
        if not await asyncio.to_thread(is_repository, self._root):
            log.warning("VAULTBOT_VAULT__GIT is on, but the vault %s is not a git repository: no commits", self._root)
            return
        await self.begin()
        while not self._stopping:
            try:
                await self.commit_finished()
            except GitError as exc:
                log.warning("the vault's git history: %s; tried again in a moment", exc)
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), self._poll)
            except TimeoutError:
                pass
        await self.commit_finished()  # what the last runs before the stop changed

    async def begin(self) -> None:
        """The first time: pass over the runs that finished before git mode (a row with no run id marks
        that it was on once, so runs made later by another command are committed all the same)."""
        async with self._db.transaction() as tx:
            if await tx.fetchone("SELECT 1 FROM git_history LIMIT 1") is None:
                await tx.execute(
                    "INSERT INTO git_history (run_id, recorded_at) "
                    "SELECT id, ? FROM runs WHERE finished_at IS NOT NULL",
                    (now_iso(),),
                )
                await tx.execute("INSERT INTO git_history (run_id, recorded_at) VALUES ('', ?)", (now_iso(),))

    async def commit_finished(self) -> int:
        """Commit each finished run not yet in the history; returns how many commits were made."""
        rows = await self._db.fetchall(
            "SELECT id, changes, final_text, (SELECT summary FROM interactions i WHERE i.run_id = runs.id "
            "ORDER BY i.id LIMIT 1) AS summary FROM runs WHERE finished_at IS NOT NULL "
            "AND id NOT IN (SELECT run_id FROM git_history) ORDER BY finished_at, rowid"
        )
        made = 0
        for row in rows:
            paths = [change["path"] for change in json.loads(row["changes"] or "[]")]
            commit = None
            if paths:
                message = f"vaultbot run {row['id']}: {_summary(row['summary'] or row['final_text'], len(paths))}"
                commit = await asyncio.to_thread(commit_notes, self._root, paths, message)
            await self._db.execute(
                "INSERT INTO git_history (run_id, git_commit, recorded_at) VALUES (?, ?, ?)",
                (row["id"], commit, now_iso()),
            )
            made += commit is not None
        return made

    async def stop(self, grace: float = 0.0) -> None:
        """Stop after committing what has finished (``grace`` is accepted so it stops like a worker)."""
        self._stopping = True
        self._wake.set()


def _summary(text: str | None, changed: int) -> str:
    line = " ".join((text or "").split())
    if not line:
        return f"{changed} note(s) changed"
    return line if len(line) <= _SUMMARY_CHARS else line[: _SUMMARY_CHARS - 1] + "…"
