"""Backups that ``vaultbot run`` takes on its own: once a period (``VAULTBOT_BACKUP__EVERY``), on
the clock the reminders keep, the newest ``VAULTBOT_BACKUP__KEEP`` kept.

A period is a number: whole periods since the epoch in the person's local time, so ``1d`` turns
over at their midnight. Its row in ``backups`` is claimed before the backup starts and finished once
the archive has its name; a process killed in between leaves the row unfinished and the archive
only as ``.partial``, so the next start takes that period's backup again, and a finished one is
never taken twice, however often the bot restarts.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.backup.errors import BackupError
from bot.backup.take import SUFFIX, Backup, archive_name, take_backup
from bot.clock import Clock
from bot.db import Database, Outage, is_transient, now_iso
from bot.settings import Settings

__all__ = ["BackupSchedule", "period_of"]

log = logging.getLogger(__name__)


def period_of(moment: datetime, every: timedelta) -> int:
    """The number of the period ``moment`` (aware) falls in: whole ``every``s of local time since the epoch."""
    offset = moment.utcoffset() or timedelta(0)
    local = moment.astimezone(UTC).replace(tzinfo=None) + offset
    return int((local - datetime(1970, 1, 1)) // every)


class BackupSchedule:
    """Takes the period's backup when it has none; runs beside the workers until :meth:`stop`."""

    def __init__(self, db: Database, settings: Settings, clock: Clock, *, poll_interval: float = 30.0) -> None:
        assert settings.backup.every is not None
        self._db = db
        self._settings = settings
        self._every = settings.backup.every
        self._clock = clock
        self._poll = poll_interval
        self._wake = asyncio.Event()
        self._stopping = False

    async def run(self) -> None:
        """Back up once a period until stopped. A backup that fails (a full disk) is logged and
        tried again at the next look; a store briefly unusable is ridden out like the reminders'."""
        outage = Outage("backups")
        while not self._stopping:
            try:
                await self.take_due()
            except BackupError as exc:
                log.warning("the scheduled backup failed: %s", exc)
            except Exception as exc:
                if not is_transient(exc):
                    raise
                outage.failed(exc, "taking the scheduled backup")
            else:
                outage.recovered()
            self._wake.clear()
            if self._stopping:
                break
            try:
                await asyncio.wait_for(self._wake.wait(), self._poll)
            except TimeoutError:
                pass

    async def take_due(self) -> Backup | None:
        """This period's backup, unless it was taken already (then None)."""
        now = self._clock.now()
        period = period_of(now, self._every)
        folder = self._settings.backup.path
        # The archive's name is chosen when the period is claimed: one killed after naming its archive
        # but before recording it is found finished by that name, not taken a second time.
        await self._db.execute(
            "INSERT INTO backups (period, started_at, path) VALUES (?, ?, ?) ON CONFLICT (period) DO NOTHING",
            (period, now_iso(), str(folder / archive_name(now))),
        )
        row = await self._db.fetchone("SELECT finished_at, path FROM backups WHERE period = ?", (period,))
        assert row is not None
        path = Path(row["path"])
        if row["finished_at"] is not None:
            log.debug("the backup of period %d was taken already", period)
            return None
        if await asyncio.to_thread(path.is_file):
            await self._finished(period, path, (await asyncio.to_thread(path.stat)).st_size)
            return None
        # What a crash mid-backup left of this period's archive (another backup's partial file is left alone).
        await asyncio.to_thread(path.with_name(path.name + ".partial").unlink, missing_ok=True)
        backup = await take_backup(self._settings, path, now)
        await self._finished(period, path, backup.archive_bytes)
        removed = await asyncio.to_thread(prune, folder, self._settings.backup.keep)
        log.info("%s Removed %d older backup(s).", backup.describe(), len(removed))
        return backup

    async def _finished(self, period: int, path: Path, size: int) -> None:
        await self._db.execute(
            "UPDATE backups SET finished_at = ?, path = ?, bytes = ? WHERE period = ?",
            (now_iso(), str(path), size, period),
        )

    async def stop(self, grace: float = 0.0) -> None:
        """Stop after the backup under way, if any (``grace`` is accepted so it stops like a worker)."""
        self._stopping = True
        self._wake.set()


def prune(folder: Path, keep: int) -> list[Path]:
    """Remove all but the newest ``keep`` backups in ``folder``; returns what it removed. Blocking:
    call it in a thread."""
    archives = sorted(folder.glob(f"vaultbot-*{SUFFIX}"), key=lambda path: path.stat().st_mtime)
    removed = archives[:-keep]
    for path in removed:
        path.unlink(missing_ok=True)
    return removed
