"""Fixtures for the Telegram tests: the fake Bot API, the channel served in-process beside a
runner worker, and `vaultbot run` as a real subprocess."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.channels import Pacer
from bot.channels.telegram import TelegramChannel
from tests.channels.telegram_harness import RunVaultbot, Serve, Served
from tests.fakes.telegram_server import FakeTelegram
from tests.helpers import subprocess_env


@pytest.fixture
def fake() -> Iterator[FakeTelegram]:
    with FakeTelegram() as server:
        yield server


@pytest.fixture
async def serve(make_app: Callable[..., Awaitable[App]], fake: FakeTelegram) -> AsyncIterator[Serve]:
    """Start the channel and a runner worker on a fresh app; ``telegram`` settings override the defaults
    (token, Ann allowlisted, the fake's URLs). ``app`` serves on an app opened before (a restart); sends
    to one chat are not paced unless ``pace`` says so."""
    running: list[tuple[TelegramChannel, Any, asyncio.Task[None], asyncio.Task[None]]] = []

    async def start(model: Any = None, *, app: App | None = None, pace: Pacer | None = None, **telegram: Any) -> Served:
        app = app or await make_app(model, telegram=fake.settings(**telegram))
        channel = TelegramChannel(
            app.settings.telegram,
            bus=app.bus,
            store=app.store,
            notes=app.notes,
            progress=app.progress,
            poll_timeout=1,
            pace=pace or Pacer(0.0),
            typing_interval=0.05,
        )
        worker = app.runner_worker()
        running.append((channel, worker, asyncio.create_task(channel.run()), asyncio.create_task(worker.run())))
        return Served(app, fake, channel, running[-1][2])

    yield start
    for channel, worker, channel_task, worker_task in running:
        await channel.stop()
        await worker.stop(5)
        await asyncio.gather(channel_task, worker_task, return_exceptions=True)


@pytest.fixture
def vaultbot_run(tmp_path: Path) -> Iterator[RunVaultbot]:
    """Start `vaultbot --verbose run` in tmp_path with these environment variables; a process still
    running at the end (a failed assertion) is killed, so none is left polling in the background."""
    started: list[subprocess.Popen[str]] = []

    def start(**env: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-m", "bot", "--verbose", "run"],  # verbose: secrets must stay out of logs too
            cwd=tmp_path,
            env=subprocess_env(**env),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        if process.stderr and not process.stderr.closed:
            process.stderr.close()
