"""``vaultbot chat``: the terminal channel, the runner and the printer in one process."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import TYPE_CHECKING, TextIO

from bot.channels import OutputClosed, Seat, TerminalChannel, read_lines, take_seat

if TYPE_CHECKING:
    from bot.app import App

log = logging.getLogger(__name__)

GRACE_SECONDS = 10.0
PROMPT = "you> "


async def chat(app: App, stream: TextIO, out: TextIO, *, interactive: bool, prompted: bool = False) -> None:
    """Handle each line in order, printing every reply before reading the next line. At a terminal
    (``interactive`` and ``out`` a TTY) replies appear as they are written.

    Ended early (Ctrl-C), it stops reading, lets the run in flight finish, prints the replies
    queued so far, then returns, all within ``GRACE_SECONDS``; what is left is redone on the next start.
    When ``out`` is closed (``vaultbot chat | head -1``) it stops reading and raises :class:`OutputClosed`
    once the run in flight has finished; the replies it could not print are printed on the next start.

    Each terminal open at once is its own conversation (:mod:`bot.channels.seats`). ``prompted``: the
    first prompt is on the screen already (shown while the app opened).
    """
    seat = await take_seat(app.settings.store.path)
    try:
        await _chat(app, stream, out, seat=seat, interactive=interactive, prompted=prompted)
    finally:
        seat.release()


async def _chat(app: App, stream: TextIO, out: TextIO, *, seat: Seat, interactive: bool, prompted: bool) -> None:
    live = interactive and out.isatty()
    if interactive and seat.number > 1:
        print(
            f"{chr(10) if prompted else ''}Another vaultbot chat is open on this store: this one is conversation "
            f"{seat.conversation}, with its own history.",
            file=sys.stderr,
        )
        prompted = False  # the prompt is shown again below it
    channel = TerminalChannel(
        app.bus, out, user=seat.user, conversation=seat.conversation, progress=app.progress if live else None
    )
    runners, printers = [app.runner_worker(), app.consent_worker(), app.scheduler], channel.workers()
    async with asyncio.TaskGroup() as tasks:
        for worker in (*runners, *printers):
            tasks.create_task(worker.run())
        streaming = tasks.create_task(channel.stream())
        try:
            async for line in read_lines(stream, PROMPT if interactive else None, prompted=prompted):
                answer = await channel.answer(line)  # a question for consent takes the next line
                if answer is not None:
                    await channel.settled(answer)
                elif line.strip():
                    await channel.settled(await channel.submit(line))
                if channel.output_closed:
                    break
        except asyncio.CancelledError:  # Ctrl-C
            log.info("stopping: finishing the message in flight and printing replies (up to %.0fs)", GRACE_SECONDS)
            raise
        finally:
            deadline = asyncio.get_running_loop().time() + GRACE_SECONDS
            await asyncio.gather(*(worker.stop(GRACE_SECONDS) for worker in runners))
            left = 0.0 if channel.output_closed else max(0.0, deadline - asyncio.get_running_loop().time())
            await asyncio.gather(*(printer.drain(left) for printer in printers))
            streaming.cancel()
    if channel.output_closed:
        raise OutputClosed("the terminal's output was closed before every reply was printed")
