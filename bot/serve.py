"""``vaultbot run``: the workers and every configured channel, until SIGINT or SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import signal

from bot.app import App
from bot.bus import Worker

log = logging.getLogger(__name__)

GRACE_SECONDS = 30.0


async def serve(app: App, stop: asyncio.Event) -> None:
    """Run until ``stop`` is set; then let in-flight work finish or release it for redelivery."""
    workers: list[Worker] = [app.runner_worker()]
    async with asyncio.TaskGroup() as tasks:
        for worker in workers:
            tasks.create_task(worker.run())
        log.info("serving with %d worker(s); Ctrl-C to stop", len(workers))
        await stop.wait()
        log.info("stopping: finishing in-flight messages (up to %.0fs)", GRACE_SECONDS)
        await asyncio.gather(*(worker.stop(GRACE_SECONDS) for worker in workers))


def stop_on_signals() -> asyncio.Event:
    """An event set by SIGINT or SIGTERM (call inside the running loop)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop
