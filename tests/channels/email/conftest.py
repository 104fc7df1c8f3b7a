"""Fixtures for the e-mail tests: a Dovecot and an aiosmtpd of each test's own, the channel served
in-process beside a runner worker, and the settings `vaultbot run` takes to reach both."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import pytest

from bot.app import App
from bot.backoff import Backoff
from bot.channels import Pacer
from bot.channels.email import EmailChannel
from bot.channels.email.bounded import LIMITS, Limits
from tests.channels.email.harness import Serve, Served, email_settings
from tests.fakes.dovecot import Dovecot
from tests.fakes.smtp_server import RecordingSmtp


@pytest.fixture
def dovecot() -> Iterator[Dovecot]:
    with Dovecot() as server:
        yield server


@pytest.fixture
def smtp() -> Iterator[RecordingSmtp]:
    with RecordingSmtp() as server:
        yield server


@pytest.fixture
async def serve(make_app: Callable[..., Awaitable[App]], dovecot: Dovecot, smtp: RecordingSmtp) -> AsyncIterator[Serve]:
    """Start the channel and a runner worker on a fresh app (or ``app``, a restart); ``email`` overrides
    the e-mail settings, ``settings`` adds other sections. Replies are not paced unless ``pace`` says so;
    a lost IMAP connection is retried after 0.05 s, doubling to 0.5 s."""
    running: list[tuple[EmailChannel, Any, asyncio.Task[None], asyncio.Task[None]]] = []

    async def start(
        model: Any = None,
        *,
        app: App | None = None,
        pace: Pacer | None = None,
        poll_interval: float = 60.0,
        max_mail_bytes: int = 25 * 1024 * 1024,
        limits: Limits = LIMITS,
        settings: dict[str, Any] | None = None,
        **email: Any,
    ) -> Served:
        app = app or await make_app(model, email=email_settings(dovecot, smtp, **email), **(settings or {}))
        channel = EmailChannel(
            app.settings.email,
            db=app.db,
            bus=app.bus,
            store=app.store,
            notes=app.notes,
            pace=pace or Pacer(most=1_000_000),
            poll_interval=poll_interval,
            reconnect=Backoff(first=0.05, most=0.5),
            max_mail_bytes=max_mail_bytes,
            limits=limits,
        )
        worker = app.runner_worker()
        running.append((channel, worker, asyncio.create_task(channel.run()), asyncio.create_task(worker.run())))
        return Served(app, channel, running[-1][2])

    yield start
    for channel, worker, channel_task, worker_task in running:
        await channel.stop()
        await worker.stop(5)
        await asyncio.gather(channel_task, worker_task, return_exceptions=True)
