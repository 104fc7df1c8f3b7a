"""Reminders firing in real time (scaled down to seconds), in-process and in real `vaultbot chat`
processes killed with SIGKILL between scheduling and firing."""

from __future__ import annotations

import asyncio
import os
import signal
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.app import App
from bot.bus import outbound_topic
from tests.helpers import SEVERAL_PROCESSES, outbox, subprocess_env
from tests.reminders.conftest import context_of

AppFactory = Callable[..., Awaitable[App]]


async def wait_for(condition: Callable[[], Awaitable[bool]], timeout: float) -> None:
    async def poll() -> None:
        while not await condition():
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), timeout)


async def test_reminders_fire_within_two_seconds_of_their_time(make_app: AppFactory) -> None:
    app = await make_app()
    start = datetime.now(UTC)
    dues = [start + timedelta(seconds=1 + 0.25 * i) for i in range(6)]
    for i, due in enumerate(dues):
        made = await app.handler._dispatcher.call(
            "schedule_message", {"text": f"tick {i}", "at": due.isoformat()}, context_of("ann", f"in-{i}")
        )
        assert made.result["success"], made.result
    seen: dict[str, float] = {}
    scheduler = asyncio.create_task(app.scheduler.run())
    try:
        with app.bus.listen(outbound_topic("terminal")) as published:
            while True:
                published.clear()
                for message in await outbox(app):
                    seen.setdefault(message.text, time.time())
                if len(seen) == len(dues):
                    break
                await asyncio.wait_for(published.wait(), 10)
    finally:
        await app.scheduler.stop()
        await scheduler
    late = sorted(seen[f"⏰ tick {i}"] - due.timestamp() for i, due in enumerate(dues))
    print(f"\nreminder lateness: p50 {statistics.median(late) * 1000:.0f} ms, max {late[-1] * 1000:.0f} ms")
    assert all(-0.05 <= x < 2.0 for x in late), late  # never early; within DESIGN's 2 s


def chat_env(tmp_path: Path) -> dict[str, str]:
    return subprocess_env(
        VAULTBOT_STORE__PATH=str(tmp_path / "vaultbot.db"),
        VAULTBOT_VAULT__PATH=str(tmp_path / "vault"),
        VAULTBOT_TIMEZONE="Asia/Kathmandu",
        USER="ann",
        LOGNAME="ann",
    )


class Chat:
    """A real `vaultbot chat` process, its standard input kept open so it keeps running."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []

    @classmethod
    async def start(cls, tmp_path: Path) -> Chat:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "chat",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            cwd=tmp_path, env=chat_env(tmp_path),
        )  # fmt: skip
        return cls(process)

    async def say(self, text: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(text.encode() + b"\n")
        await self.process.stdin.drain()

    async def read_until(self, needle: str, timeout: float = 30) -> None:
        assert self.process.stdout is not None
        async with asyncio.timeout(timeout):
            while not any(needle in line for line in self.lines):
                line = await self.process.stdout.readline()
                assert line, f"chat exited; it printed {self.lines}"
                self.lines.append(line.decode())

    def kill(self) -> None:
        if self.process.returncode is None:
            os.kill(self.process.pid, signal.SIGKILL)

    async def close(self) -> list[str]:
        """End input, let it exit, and return everything it printed."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        rest = await asyncio.wait_for(self.process.stdout.read(), 30)
        await asyncio.wait_for(self.process.wait(), 30)
        return self.lines + rest.decode().splitlines(keepends=True)


@SEVERAL_PROCESSES
async def test_a_reminder_survives_sigkill_and_fires_once_across_two_instances(
    tmp_path: Path, make_app: AppFactory
) -> None:
    first = await Chat.start(tmp_path)
    try:
        await first.say("/reminders")
        await first.read_until("No reminders pending.")
        # Scheduled by the running bot's conversation (a naive time, read in Asia/Kathmandu).
        app = await make_app(timezone="Asia/Kathmandu")
        due = (datetime.now(app.clock.tz) + timedelta(seconds=3)).replace(microsecond=0, tzinfo=None)
        made = await app.handler._dispatcher.call(
            "schedule_message", {"text": "survive the crash", "at": due.isoformat()}, context_of("ann")
        )
        assert made.result["next"] == due.isoformat() + "+05:45"
        first.kill()  # between scheduling and firing
        await first.process.wait()
        assert not any("survive" in line for line in first.lines)
    finally:
        first.kill()
    # Due while down: both instances start after the due time and neither may fire it twice.
    due_at = due.replace(tzinfo=app.clock.tz).timestamp()
    await wait_for(lambda: asyncio.sleep(0, time.time() > due_at + 0.5), 10)
    chats = [await Chat.start(tmp_path), await Chat.start(tmp_path)]
    try:

        async def fired() -> bool:
            return any("survive the crash" in m.text for m in await outbox(app))

        await wait_for(fired, 30)
        printed = [line for chat in chats for line in await chat.close() if "survive the crash" in line]
    finally:
        for chat in chats:
            chat.kill()
    assert printed == ["vaultbot> ⏰ survive the crash\n"]
    assert [m.text for m in await outbox(app) if "survive" in m.text] == ["⏰ survive the crash"]
    assert await app.reminders.pending("terminal:ann") == []
