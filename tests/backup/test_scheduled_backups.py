"""Backups `vaultbot run` takes on its own: once a period on the injected clock, across restarts and
a SIGKILL, the newest KEEP kept."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from bot.app import App
from bot.backup import BackupSchedule, period_of
from bot.cli.serve import serve
from bot.clock import Clock
from tests.conftest import make_settings
from tests.helpers import SEVERAL_PROCESSES, subprocess_env

CHILD = Path(__file__).with_name("scheduled_child.py")
START = datetime(2026, 11, 23, 8, 0, tzinfo=UTC)


def archives(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("vaultbot-*.tar.gz"))


def wait_for(condition: Callable[[], bool], timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_period_is_counted_in_local_time_so_a_day_turns_over_at_midnight() -> None:
    day = timedelta(days=1)
    berlin = ZoneInfo("Europe/Berlin")
    before = datetime(2026, 11, 23, 23, 59, tzinfo=berlin)
    assert period_of(before, day) == period_of(datetime(2026, 11, 23, 0, 0, tzinfo=berlin), day)
    assert period_of(before + timedelta(minutes=1), day) == period_of(before, day) + 1


async def test_the_schedule_takes_one_backup_a_period_and_keeps_the_newest(tmp_path: Path) -> None:
    now = [START]
    settings = make_settings(tmp_path, backup={"every": "1d", "keep": 2, "path": tmp_path / "backups"})
    async with await App.open(settings, clock=Clock(UTC, lambda: now[0])) as app:
        schedule = BackupSchedule(app.db, settings, app.clock)
        assert await schedule.take_due() is not None
        assert await schedule.take_due() is None  # the same day: nothing more
        for _ in range(3):
            now[0] += timedelta(days=1)
            assert await schedule.take_due() is not None
    assert archives(tmp_path / "backups") == ["vaultbot-20261125-080000.tar.gz", "vaultbot-20261126-080000.tar.gz"]


async def test_vaultbot_run_takes_the_due_backup_while_it_serves(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, backup={"every": "12h", "path": tmp_path / "backups"})
    async with await App.open(settings, clock=Clock(UTC, lambda: START)) as app:
        stop = asyncio.Event()
        serving = asyncio.create_task(serve(app, stop, announce=lambda url: None))
        async with asyncio.timeout(30):
            while not archives(tmp_path / "backups"):
                await asyncio.sleep(0.02)
        stop.set()
        await serving
    assert archives(tmp_path / "backups") == ["vaultbot-20261123-080000.tar.gz"]


@SEVERAL_PROCESSES
def test_one_backup_a_period_across_a_sigkill_and_restarts(tmp_path: Path) -> None:
    dial = tmp_path / "now"
    dial.write_text(START.isoformat())
    folder = tmp_path / "data" / "backups"
    env = subprocess_env(VAULTBOT_BACKUP__EVERY="1d", VAULTBOT_TIMEZONE="UTC")

    def start() -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, str(CHILD), str(dial)], cwd=tmp_path, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert child.stdout is not None and child.stdout.readline() == "started\n"
        return child

    def kill(child: subprocess.Popen[str]) -> None:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        assert child.stdout is not None
        child.stdout.close()

    child = start()
    wait_for(lambda: len(archives(folder)) == 1)
    kill(child)  # perhaps after naming the archive, before recording it: the record is finished by its name
    child = start()  # the same day after a SIGKILL: it has its backup
    assert child.stdout is not None
    assert "was taken already" in child.stdout.readline()
    kill(child)
    assert len(archives(folder)) == 1

    # A SIGKILL mid-backup leaves what this leaves: the period claimed, unfinished, and a partial archive.
    dial.write_text((START + timedelta(days=1)).isoformat())
    with closing(sqlite3.connect(tmp_path / "data" / "vaultbot.db")) as db, db:
        day = period_of(START + timedelta(days=1), timedelta(days=1))
        db.execute(
            "INSERT INTO backups (period, started_at, path) VALUES (?, '2026-11-24T08:00:00Z', ?)",
            (day, str(folder / "vaultbot-20261124-080000.tar.gz")),
        )
    (folder / "vaultbot-20261124-080000.tar.gz.partial").write_bytes(b"half an archive")
    child = start()
    wait_for(lambda: finished(tmp_path) == 2)
    kill(child)
    assert archives(folder) == ["vaultbot-20261123-080000.tar.gz", "vaultbot-20261124-080000.tar.gz"]
    assert not list(folder.glob("*.partial"))


def finished(home: Path) -> int:
    with closing(sqlite3.connect(home / "data" / "vaultbot.db")) as db:
        return int(db.execute("SELECT count(*) FROM backups WHERE finished_at IS NOT NULL").fetchone()[0])
