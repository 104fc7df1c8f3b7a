"""The worker loop, after arq: claim due messages, run a handler on each, settle the outcome.

A handler settles its message by returning (ack; or returning :data:`ACKED` when it acked the
message itself, inside the transaction that recorded its results), raising :class:`Retry` (nack with a delay),
raising :class:`Fatal` (dead-letter now), raising :class:`LeaseLost` (claimed again while it
was paused past its lease: left to the new claim) or raising anything else (logged, retried with
exponential backoff and jitter). After ``max_attempts`` the message is dead-lettered and
``on_dead`` is told. While a handler runs, its lease is extended, so only a worker that really
stopped (a crash, SIGKILL) lets its message be redelivered.

The worker's own bookkeeping (claiming, settling, renewing leases) rides out a database that is
briefly unusable (locked by another process, disk full; see :mod:`bot.db.outage`): one line when
the trouble starts, backoff, one line when it ends. A message whose settling failed stays leased
and is redelivered once its lease runs out, so it is neither lost nor settled twice. Any other
error in the bookkeeping ends :meth:`Worker.run` with that error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Awaitable, Callable

from bot.backoff import Backoff, describe
from bot.bus.bus import Bus, Delivery, LeaseLost
from bot.db import Outage, is_transient

__all__ = ["ACKED", "Fatal", "Handler", "OnDead", "Retry", "Worker"]

log = logging.getLogger(__name__)

# Returned by a handler that acked its message itself, so the worker need not ack again.
ACKED = True

Handler = Callable[[Delivery], Awaitable[bool | None]]
OnDead = Callable[[Delivery, BaseException], Awaitable[None]]


class Retry(Exception):
    """Deliver this message again after ``delay`` seconds (the worker's backoff when None)."""

    def __init__(self, delay: float | None = None, reason: str = "") -> None:
        super().__init__(reason or "retry requested")
        self.delay = delay


class Fatal(Exception):
    """Retrying this message cannot help: dead-letter it now."""


class LeaseExpired(Exception):
    """A message's lease ran out too many times: its worker keeps dying while handling it."""


class Worker:
    """Runs ``handler`` on the messages of one topic, up to ``concurrency`` at a time."""

    def __init__(
        self,
        bus: Bus,
        topic: str,
        handler: Handler,
        *,
        concurrency: int = 1,
        lease: float = 60.0,
        max_attempts: int = 5,
        backoff: float = 1.0,
        backoff_max: float = 300.0,
        on_dead: OnDead | None = None,
        poll_interval: float = 1.0,
        name: str = "worker",
        conversation: str | None = None,
    ) -> None:
        """With ``conversation``, the worker takes only that conversation's messages of ``topic``."""
        self.bus = bus
        self.topic = topic
        self.conversation = conversation
        self.handler = handler
        self.concurrency = concurrency
        self.lease = lease
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.backoff_max = backoff_max
        self.on_dead = on_dead
        self.poll_interval = poll_interval
        self.owner = f"{name}@{socket.gethostname()}:{os.getpid()}:{id(self):x}"
        self._tasks: set[asyncio.Task[None]] = set()
        # The messages whose handlers are running, for the heartbeat to renew their leases.
        self._leased: dict[int, int] = {}  # message id: the attempt of its claim
        self._wake = asyncio.Event()
        self._stopping = False
        # Set by drain(): the loop time after which nothing that is not yet due is waited for.
        self._drain_until: float | None = None
        self._finished = asyncio.Event()
        self._outage = Outage(f"{name} worker on {topic}")
        # A permanent error in the bookkeeping of a message's task, for run() to raise.
        self._broken: BaseException | None = None

    async def run(self, *, burst: bool = False) -> None:
        """Work until :meth:`stop`; with ``burst``, return once the topic has nothing left to do.

        A burst waits for messages scheduled for later (a retry's backoff), not only due ones.
        """
        try:
            await self._run(burst)
        finally:
            self._finished.set()

    async def _run(self, burst: bool) -> None:
        heartbeat = asyncio.create_task(self._heartbeat())
        heartbeat.add_done_callback(self._note_failure)
        try:
            await self._work(burst)
        finally:
            heartbeat.cancel()

    async def _work(self, burst: bool) -> None:
        # A publish on the topic wakes the loop as a finished handler or stop() does.
        with self.bus.listen(self.topic, self._wake):
            while not self._stopping:
                await self._raise_if_broken()
                self._wake.clear()
                free = self.concurrency - len(self._tasks)
                claimed: list[Delivery] = []
                due_in: float | None = None
                if free:
                    polled = await self._poll(free)
                    if polled is None:
                        continue
                    claimed, due_in = polled
                for delivery in claimed:
                    task = asyncio.create_task(self._handle(delivery), name=f"{self.topic}#{delivery.id}")
                    self._tasks.add(task)
                    task.add_done_callback(self._done)
                if claimed and len(claimed) == free:
                    continue  # there may be more due: claim again at once
                # Fewer than it could: it took every message that was due, and a publish since then has
                # set the wake-up (cleared before the poll), so polling again now would find nothing.
                if not self._tasks and self._nothing_left(burst, due_in):
                    break
                timeout = self.poll_interval if due_in is None else min(self.poll_interval, due_in)
                await self._sleep(max(timeout, 0.001))
        await self._wait_in_flight()
        await self._raise_if_broken()

    async def _poll(self, free: int) -> tuple[list[Delivery], float | None] | None:
        """Claim up to ``free`` messages, and when none and none is in flight, how soon one comes
        due: busy, a finishing handler wakes the loop anyway, and only an idle worker must know when
        a delayed message (a retry's backoff) comes due. None, after a backoff, when the database is
        briefly unusable."""
        try:
            claimed = await self.bus.claim(
                self.topic, owner=self.owner, lease=self.lease, limit=free, conversation=self.conversation
            )
            due_in = None if claimed or self._tasks else await self.bus.next_due_in(self.topic, self.conversation)
        except Exception as exc:
            if not is_transient(exc):
                raise
            pause = self._outage.failed(exc, "claiming messages, which stay queued")
            await self._sleep(pause)  # a wake-up (stop(), a finished handler, a publish) cuts it short
            return None
        self._outage.recovered()
        return claimed, due_in

    async def _sleep(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for a wake-up (a publish on the topic, a finished handler,
        :meth:`stop`, :meth:`drain`). One event and a timer: no task per pass of the loop."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._wake.wait()
        # One pass of the event loop before the next poll: a handler's ack wakes the worker, and so
        # does its task ending right after, and one poll serves both (and other handlers ending now).
        await asyncio.sleep(0)

    async def stop(self, grace: float = 10.0) -> None:
        """Claim nothing more; give in-flight handlers ``grace`` seconds, then release their messages."""
        self._stopping = True
        self._wake.set()
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=grace)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

    async def drain(self, grace: float) -> None:
        """Handle what is queued, up to ``grace`` seconds, then stop: :meth:`run` returns once no
        message is in flight and none comes due within the grace period. Whatever is still in
        flight when it ends is released as by :meth:`stop`."""
        loop = asyncio.get_running_loop()
        self._drain_until = loop.time() + grace
        self._wake.set()
        try:
            await asyncio.wait_for(self._finished.wait(), grace)
        except TimeoutError:
            await self.stop(0)

    def _nothing_left(self, burst: bool, due_in: float | None) -> bool:
        """Whether an idle burst or drain is done; ``due_in`` is when the next message comes due."""
        if self._drain_until is not None:
            return due_in is None or due_in > self._drain_until - asyncio.get_running_loop().time()
        return burst and due_in is None

    async def _wait_in_flight(self) -> None:
        if self._tasks:
            await asyncio.gather(*set(self._tasks), return_exceptions=True)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._note_failure(task)
        self._wake.set()

    def _note_failure(self, task: asyncio.Task[None]) -> None:
        # A message's task raises only for a permanent error in the bookkeeping: run() raises it.
        if not task.cancelled() and task.exception() is not None and self._broken is None:
            self._broken = task.exception()
            self._wake.set()

    async def _raise_if_broken(self) -> None:
        if self._broken is not None:
            await self.stop(0)  # what is in flight is released for redelivery
            raise self._broken

    async def _handle(self, delivery: Delivery) -> None:
        if delivery.attempts > self.max_attempts:
            # Claimed more often than allowed without ever being settled: every worker that took
            # it died. Running it again would likely kill this one too.
            await self._dead(
                delivery, LeaseExpired(f"its worker stopped {delivery.attempts - 1} times while handling it")
            )
            return
        self._leased[delivery.id] = delivery.attempts
        try:
            acked = await self.handler(delivery)
        except asyncio.CancelledError:
            # Stopped before finishing: hand the message back at once for redelivery.
            stopped = self.bus.nack(delivery.id, error="worker stopped", attempt=delivery.attempts)
            await self._settle(delivery, asyncio.shield(stopped))
            raise
        except LeaseLost as exc:
            # Paused past its lease and claimed again: that claim settles the message, not this one.
            log.warning("%s#%s left to its new claim: %s", self.topic, delivery.id, exc)
        except Retry as exc:
            await self._retry(delivery, exc, exc.delay)
        except Fatal as exc:
            await self._dead(delivery, exc)
        except Exception as exc:
            log.exception("handler failed on %s#%s (attempt %s)", self.topic, delivery.id, delivery.attempts)
            await self._retry(delivery, exc, None)
        else:
            if acked is not ACKED:
                await self._settle(delivery, self.bus.ack(delivery.id, attempt=delivery.attempts))
        finally:
            self._leased.pop(delivery.id, None)

    async def _retry(self, delivery: Delivery, error: BaseException, delay: float | None) -> None:
        if delivery.attempts >= self.max_attempts:
            await self._dead(delivery, error)
            return
        if delay is None:
            delay = Backoff(self.backoff, self.backoff_max, jitter=True).delay(delivery.attempts)
        log.info("retrying %s#%s in %.1fs: %s", self.topic, delivery.id, delay, describe(error))
        again = self.bus.nack(delivery.id, delay=delay, error=describe(error), attempt=delivery.attempts)
        await self._settle(delivery, again)

    async def _dead(self, delivery: Delivery, error: BaseException) -> None:
        log.warning(
            "dead-lettering %s#%s after %s attempt(s): %s", self.topic, delivery.id, delivery.attempts, describe(error)
        )
        if self.on_dead is not None:
            try:
                await self.on_dead(delivery, error)
            except Exception:
                log.exception("on_dead failed for %s#%s", self.topic, delivery.id)
        await self._settle(delivery, self.bus.dead(delivery.id, describe(error), attempt=delivery.attempts))

    async def _settle(self, delivery: Delivery, settling: Awaitable[object]) -> None:
        """Await an ack, nack or dead-letter of ``delivery``. If the database is briefly unusable
        the message stays leased, so it is redelivered once its lease runs out; settling it later
        instead could undo a redelivery already under way."""
        try:
            await settling
        except Exception as exc:
            if not is_transient(exc):
                raise
            doing = f"settling {self.topic}#{delivery.id}, which is redelivered when its lease runs out"
            self._outage.failed(exc, doing)
        else:
            self._outage.recovered()

    async def _heartbeat(self) -> None:
        """Renew the lease of every message whose handler is running, every third of a lease: one
        task for the worker, not one per message (most handlers finish long before a renewal)."""
        every = self.lease / 3
        pause = every
        while True:
            await asyncio.sleep(pause)
            pause = every
            for message_id, attempt in list(self._leased.items()):
                try:
                    await self.bus.extend(message_id, self.lease, attempt=attempt)
                except Exception as exc:
                    if not is_transient(exc):
                        raise
                    # Sooner than usual, so the leases are renewed before they run out if the database comes back.
                    pause = min(every, self._outage.failed(exc, f"renewing the lease of {self.topic}#{message_id}"))
                    break  # the database is unusable: the other leases wait for the next try too
                self._outage.recovered()
