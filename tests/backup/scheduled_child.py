"""A `vaultbot run`'s backup schedule in a process of its own, on a clock the test sets by writing an
ISO 8601 instant into the file named by the first argument (tests/backup/test_scheduled_backups.py)."""

from __future__ import annotations

import asyncio
import logging
import sys
from datetime import datetime
from pathlib import Path

from bot.app import App
from bot.backup import BackupSchedule
from bot.clock import Clock
from bot.settings import load_settings


async def main(dial: Path) -> None:
    # What the schedule decides, on standard output for the test to wait on.
    told = logging.StreamHandler(sys.stdout)
    told.setLevel(logging.DEBUG)
    schedule_log = logging.getLogger("bot.backup.schedule")
    schedule_log.setLevel(logging.DEBUG)
    schedule_log.addHandler(told)
    settings = load_settings()
    clock = Clock(settings.zone, now_utc=lambda: datetime.fromisoformat(dial.read_text().strip()))
    async with await App.open(settings, clock=clock) as app:
        print("started", flush=True)
        await BackupSchedule(app.db, settings, app.clock, poll_interval=0.05).run()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
