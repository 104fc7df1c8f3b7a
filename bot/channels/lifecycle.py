"""Starting and stopping a channel, as ``vaultbot run`` does (:mod:`bot.cli.serve`).

A channel runs until stopped, in two steps so nothing is lost: :meth:`Channel.stop_receiving` first (no
new message comes in while the runs in flight finish), then :meth:`Channel.stop`, which lets the outbox
send what those runs queued for up to ``grace`` seconds; what is left is released and sent on the next
start. :class:`Lifecycle` is that protocol done once, for a channel that receives from a service and
sends through its outbox workers (:mod:`bot.channels.outbox`).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Protocol

from bot.bus import Worker

__all__ = ["Channel", "Lifecycle"]


class Channel(Protocol):
    """What ``vaultbot run`` starts. ``ready`` is set once the channel serves, and ``serving_as`` then
    says whom it serves as and for whom, in a few words for the person starting it."""

    ready: asyncio.Event
    serving_as: str

    async def run(self) -> None:
        """Receive and send until :meth:`stop`; an error that stops the channel propagates."""

    def stop_receiving(self) -> None:
        """Stop receiving; replies go on being sent until :meth:`stop`."""

    async def stop(self, grace: float = 10.0) -> None:
        """Stop receiving, send what the outbox holds for up to ``grace`` seconds, then stop."""


class Lifecycle:
    """The start and stop of a channel: a subclass calls :meth:`serve` from its ``run`` with its outbox
    workers and its receiving loop, which watches :attr:`_stopping` and waits with :meth:`_pause`."""

    def __init__(self) -> None:
        self.ready = asyncio.Event()
        self.serving_as = ""
        self._stopping = asyncio.Event()  # stop receiving
        self._closing = asyncio.Event()  # stop sending, once the outbox is drained or ``_grace`` is up
        self._grace = 0.0

    def stop_receiving(self) -> None:
        """Stop receiving; replies go on being sent until :meth:`stop`."""
        self._stopping.set()

    async def stop(self, grace: float = 10.0) -> None:
        """Stop receiving, send what the outbox holds for up to ``grace`` seconds, then stop; what is
        left is released and sent on the next start. ``run`` returns when this is done."""
        self._grace = grace
        self._stopping.set()
        self._closing.set()

    async def serve(
        self,
        workers: Sequence[Worker],
        receive: Callable[[], Coroutine[Any, Any, None]],
        *,
        beside: Sequence[Callable[[], Coroutine[Any, Any, None]]] = (),
    ) -> None:
        """Run ``workers`` (and ``beside``, cancelled at the end) while ``receive`` runs; once it returns
        (receiving stopped), keep sending until :meth:`stop` says how long is left, then stop them."""
        async with asyncio.TaskGroup() as tasks:
            for worker in workers:
                tasks.create_task(worker.run())
            others = [tasks.create_task(other()) for other in beside]
            try:
                await receive()
                await self._closing.wait()
                await asyncio.gather(*(worker.drain(self._grace) for worker in workers))
            finally:
                for worker in workers:
                    await worker.stop()
                for other in others:
                    other.cancel()
                await asyncio.gather(*others, return_exceptions=True)

    async def _pause(self, seconds: float) -> None:
        """Wait ``seconds``, or less when receiving stops meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)
