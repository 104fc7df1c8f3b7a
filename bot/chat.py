"""``vaultbot chat``: the terminal channel, the runner and the printer in one process."""

from __future__ import annotations

import asyncio
from typing import TextIO

from bot.app import App
from bot.channels import TerminalChannel, read_lines

GRACE_SECONDS = 10.0


async def chat(app: App, stream: TextIO, out: TextIO, *, interactive: bool) -> None:
    """Handle each line in order, printing every reply before reading the next line. At a terminal
    (``interactive`` and ``out`` a TTY) replies appear as they are written."""
    live = interactive and out.isatty()
    channel = TerminalChannel(app.bus, out, progress=app.progress if live else None)
    workers = [app.runner_worker(), app.scheduler, *channel.workers()]
    async with asyncio.TaskGroup() as tasks:
        for worker in workers:
            tasks.create_task(worker.run())
        streaming = tasks.create_task(channel.stream())
        try:
            async for line in read_lines(stream, "you> " if interactive else None):
                if line.strip():
                    await channel.settled(await channel.submit(line))
        finally:
            for worker in workers:
                await worker.stop(GRACE_SECONDS)
            streaming.cancel()
