"""``vaultbot run``: the workers and every configured channel, until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import TYPE_CHECKING, Any

from bot.app import App
from bot.backup import BackupSchedule, ConflictNotices, GitHistory
from bot.bus import Worker
from bot.channels import Channel
from bot.channels.telegram import TelegramChannel
from bot.clock import zone_name
from bot.reminders import Scheduler
from bot.runner import CaptureModel

if TYPE_CHECKING:
    from bot.channels.email import EmailChannel
    from bot.channels.matrix import MatrixChannel
    from bot.web import ReviewServer

log = logging.getLogger(__name__)

GRACE_SECONDS = 30.0


async def serve(
    app: App,
    stop: asyncio.Event,
    *,
    announce: Callable[[str], None] = print,
    tell: Callable[[str], None] | None = None,
    grace: float = GRACE_SECONDS,
) -> None:
    """Run until ``stop`` is set; then let in-flight work finish or release it for redelivery.

    Stopping goes in order, all within ``grace`` seconds: the channels stop receiving, the runs in
    flight finish (and the reminders stop firing), then the channels send the replies queued so
    far. A run or reply still unfinished when the time is up is released and redone on the next
    start, so nothing is lost and nothing is sent twice.

    A channel that fails (another instance polling the same Telegram token) stops everything and
    its error propagates. With the review page enabled, it serves at once, and its address (token
    included) is passed to ``announce`` right after ``tell``'s line that it serves, never logged; ``/review``
    in chat answers with a sign-in link. ``tell`` hears what a person starting it should know, a line
    each: once every channel is ready, the mode and whom each serves as (the Telegram bot), and before
    that a channel that cannot reach its service yet.

    The configuration it runs with is recorded in the store once it serves (every channel ready), for
    the review page to show: a run refused at start (a port in use, a token refused) leaves the
    configuration of the run that served as it was.
    """
    async with AsyncExitStack() as pages:
        review = await _review(app, pages) if app.settings.review.enabled else None
        await _serve(app, stop, review, announce, tell or (lambda line: None), grace)


def configuration(app: App) -> dict[str, Any]:
    """What the bot runs with, as the review page's health section shows it: nothing secret."""
    settings = app.settings
    return {
        "mode": "capture" if isinstance(app.model, CaptureModel) else "assistant",
        "model": app.model.name,
        "channels": [
            name
            for name, on in (
                ("telegram", settings.telegram.token is not None),
                ("email", settings.email.enabled),
                ("matrix", settings.matrix.enabled),
            )
            if on
        ],
        "budget_daily_usd": settings.budget.daily_usd,
        "timezone": zone_name(app.clock.tz),
        "transcription": settings.transcribe.enabled,
        "review_page": settings.review.enabled,
        "mcp_servers": [
            {"name": link.name, "state": link.state, "tools": len(link.listing.offered), "reason": link.reason}
            for link in (app.mcp.links if app.mcp is not None else [])
        ],
    }


async def _serve(
    app: App,
    stop: asyncio.Event,
    review: tuple[ReviewServer, str] | None,
    announce: Callable[[str], None],
    tell: Callable[[str], None],
    grace: float,
) -> None:
    workers: list[Worker | Scheduler | BackupSchedule | GitHistory | ConflictNotices] = [
        app.runner_worker(),
        app.consent_worker(),
        app.scheduler,
        ConflictNotices(app.db, app.bus, app.notes),
    ]
    if app.settings.backup.every is not None:
        workers.append(BackupSchedule(app.db, app.settings, app.clock))
    if app.settings.vault.git:
        workers.append(GitHistory(app.db, app.notes.root))
    channels: list[Channel] = [_telegram(app, tell)] if app.settings.telegram.token is not None else []
    if app.settings.email.enabled:
        channels.append(_email(app, tell))
    if app.settings.matrix.enabled:
        channels.append(_matrix(app))
    async with asyncio.TaskGroup() as tasks:
        for worker in workers:
            tasks.create_task(worker.run())
        if review is not None:
            tasks.create_task(review[0].serve(stop))
        # What it says at start, one block in order once it serves: the mode and channels, then the page.
        telling = tasks.create_task(_when_ready(app, channels, tell, lambda: announce(review[1]) if review else None))
        running = [tasks.create_task(channel.run()) for channel in channels]
        log.info("serving %d channel(s) with %d worker(s); Ctrl-C to stop", len(channels), len(workers))
        stopped = asyncio.ensure_future(stop.wait())
        await asyncio.wait([stopped, *running], return_when=asyncio.FIRST_COMPLETED)
        stopped.cancel()
        telling.cancel()
        log.info("stopping: finishing in-flight messages and sending their replies (up to %.0fs)", grace)
        deadline = asyncio.get_running_loop().time() + grace
        for channel in channels:
            channel.stop_receiving()
        await asyncio.gather(*(worker.stop(grace) for worker in workers))
        left = max(0.0, deadline - asyncio.get_running_loop().time())
        await asyncio.gather(*(channel.stop(left) for channel in channels))


async def _when_ready(app: App, channels: list[Channel], tell: Callable[[str], None], then: Callable[[], None]) -> None:
    """Once every channel is ready, one line: the mode and whom each channel serves as; ``then`` right
    after it (the review page's address). A channel that cannot start says so instead, alone."""
    await asyncio.gather(*(channel.ready.wait() for channel in channels))
    await app.store.record_bot_config(configuration(app))
    model = app.model.name
    mode = "capture mode" if isinstance(app.model, CaptureModel) else f"assistant mode with {model}"
    serving = "; ".join(channel.serving_as for channel in channels) or "no channel"
    tell(f"vaultbot run: {mode}; {serving}; Ctrl-C to stop")
    then()


async def _review(app: App, pages: AsyncExitStack) -> tuple[ReviewServer, str]:
    """The page, over a read-only connection of its own (open until ``pages`` closes), its address
    recorded in the store before it serves; and its address with the token, to announce."""
    from bot.web import Answers, ReviewServer, review_page, review_token

    settings = app.settings.review
    token = await review_token(app.settings, app.db)
    page = await pages.enter_async_context(review_page(app.settings, token, answers=Answers(app.bus)))
    server = ReviewServer(page, settings.host, settings.port)
    await app.store.record_review_page(server.served(token))
    app.review.page = (server.address, token)
    return server, server.url(token)


def _telegram(app: App, tell: Callable[[str], None]) -> TelegramChannel:
    return TelegramChannel(
        app.settings.telegram,
        bus=app.bus,
        store=app.store,
        notes=app.notes,
        progress=app.progress,
        lease=app.settings.bus.lease_seconds,
        review_app=app.settings.review.app_url,
        tell=tell,
    )


def _email(app: App, tell: Callable[[str], None]) -> EmailChannel:
    # Imported when the channel is on: its IMAP, SMTP and mail-reading libraries cost a run without it.
    from bot.channels.email import EmailChannel

    return EmailChannel(
        app.settings.email,
        db=app.db,
        bus=app.bus,
        store=app.store,
        notes=app.notes,
        lease=app.settings.bus.lease_seconds,
        tell=tell,
    )


def _matrix(app: App) -> MatrixChannel:
    # Imported when the channel is on, as the e-mail channel is: matrix-nio and aiohttp cost a run without it.
    from bot.channels.matrix import MatrixChannel

    return MatrixChannel(
        app.settings.matrix,
        bus=app.bus,
        store=app.store,
        notes=app.notes,
        data=app.settings.store.path.parent,
        progress=app.progress,
        lease=app.settings.bus.lease_seconds,
    )
