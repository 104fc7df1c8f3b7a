"""The database's own thread: runs functions one at a time, in order, and hands their results back
to the event loop.

Each hand-off costs a wake-up on both sides (the thread's queue, the loop's self-pipe), which on
the hot path costs more than the SQLite statement itself, and on a busy machine each wake-up can
cost a trip through the OS scheduler. So wake-ups are shared: the calls queued during one pass of
the event loop go to the thread together, the thread runs everything queued by the time it wakes
before it hands back, and it hands back that whole batch in one loop callback. The statements of
many conversations share wake-ups instead of paying two each. (``run_in_executor`` would also add
a ``concurrent.futures.Future``, its ``Condition`` and a callback chain to every call.)

Work is shared too. A call is either a *unit* (:meth:`DatabaseThread.unit`, or :meth:`post` for
one nobody waits for, whose failure is logged), which may run together with the units next to it,
or an ordinary call (:meth:`submit`), which always runs alone. Units that come one after another in the queue go as
one group to ``run_group`` (for the database: one transaction, one commit for many conversations'
writes); an ordinary call ends the group, so everything still runs in the order it was queued.
``run_group`` returns each unit's result or exception, and the thread hands them back only once
the group is done, with the rest of the batch.

A posted call may wait a little (``hold``) for the next call someone awaits, and go to the thread
with it: a turn posts a step after each model or tool call, and the step would otherwise cost a
wake-up and a commit of its own between two of the turn's writes. Nothing overtakes it meanwhile:
any other call hands it over first, and once ``hold`` has passed it goes on its own.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Call", "DatabaseThread", "Outcome", "outcome_of", "run_each"]

log = logging.getLogger(__name__)

T = TypeVar("T")

# A function to run and its arguments.
Call = tuple[Callable[..., Any], tuple[Any, ...]]
# What a call gave: its result, or the exception it raised (then the result is None).
Outcome = tuple[Any, BaseException | None]

# A call waiting to run: where to hand back (nowhere for a posted call), what to run, and whether
# it is a unit that may run in a group.
_Job = tuple[asyncio.AbstractEventLoop | None, "asyncio.Future[Any] | None", Call, bool]
# A finished call: its future, and its result or the exception it raised.
_Done = tuple["asyncio.Future[Any]", Any, BaseException | None]


def run_each(calls: list[Call]) -> list[Outcome]:
    """Run units one by one: the default ``run_group``, for units that share nothing."""
    return [outcome_of(fn, args) for fn, args in calls]


class DatabaseThread:
    """One thread that runs submitted functions in the order they were submitted.

    Units (:meth:`unit`, :meth:`post`) that come next to each other in that order go together to
    ``run_group`` (by default :func:`run_each`), which may run them as one unit of its own, such as
    one transaction, and returns one :data:`Outcome` per unit, in order.
    """

    def __init__(
        self, name: str, *, run_group: Callable[[list[Call]], list[Outcome]] = run_each, hold: float = 0.0
    ) -> None:
        self.run_group = run_group
        # Seconds a posted call may wait for a call that someone awaits (see the module docstring).
        self._hold = hold
        # Called on this thread after each batch of calls, e.g. to let a checkpoint follow writes.
        self.after_batch: Callable[[], None] = _nothing
        self._jobs: queue.SimpleQueue[list[_Job] | None] = queue.SimpleQueue()
        # Calls queued during this pass of the event loop (or posted and held), not yet handed to the thread.
        self._pending: list[_Job] = []
        # Whether a hand-over is due at the end of this pass; the timer of held posted calls, if any.
        self._soon = False
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = False
        # A daemon, so a database left open cannot keep the process from exiting.
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue ``fn(*args)`` to run alone; the future resolves on the calling loop. Cancelling
        the future does not stop the call: once queued, it runs."""
        return self._submit(fn, args, unit=False)

    def unit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue ``fn(*args)`` as a unit: like :meth:`submit`, but it may run in a group with the
        units queued next to it (see ``run_group``)."""
        return self._submit(fn, args, unit=True)

    def post(self, fn: Callable[..., object], *args: Any) -> None:
        """Queue ``fn(*args)`` as a unit nobody waits for: it runs after everything queued before
        it and before everything queued after it, at the latest ``hold`` seconds from now; if it
        raises, the error is logged."""
        self._queue(asyncio.get_running_loop(), (None, None, (fn, args), True), held=True)

    def stop(self) -> None:
        """Let the thread end once the calls queued so far have run; later calls are refused."""
        self._stopped = True
        self._hand_over()
        self._jobs.put(None)

    def _submit(self, fn: Callable[..., T], args: tuple[Any, ...], *, unit: bool) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue(loop, (loop, future, (fn, args), unit))
        return future

    def _queue(self, loop: asyncio.AbstractEventLoop, job: _Job, *, held: bool = False) -> None:
        self._refuse_if_stopped()
        self._pending.append(job)
        if self._soon:
            return
        if not held or self._hold <= 0:
            self._soon = True
            loop.call_soon(self._hand_over)
        elif self._timer is None:
            self._timer = loop.call_later(self._hold, self._hand_over)

    def _hand_over(self) -> None:
        self._soon = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        jobs, self._pending = self._pending, []
        if jobs:
            self._jobs.put(jobs)

    def _refuse_if_stopped(self) -> None:
        # A call queued behind the stop would never run, and its caller would wait forever.
        if self._stopped:
            raise RuntimeError("The database is closed.")

    def _serve(self) -> None:
        while True:
            batches = [self._jobs.get()]
            while True:  # whatever was queued meanwhile joins this batch
                try:
                    batches.append(self._jobs.get_nowait())
                except queue.Empty:
                    break
            done: dict[asyncio.AbstractEventLoop, list[_Done]] = {}
            group: list[_Job] = []
            for jobs in batches:
                for job in jobs or ():
                    if job[3]:
                        group.append(job)
                        continue
                    if group:
                        self._run_group(group, done)
                        group = []
                    self._run_alone(job, done)
            if group:
                self._run_group(group, done)
            for loop, outcomes in done.items():
                try:
                    loop.call_soon_threadsafe(_settle, outcomes)
                except RuntimeError:  # the loop is closed: nobody is waiting any more
                    pass
            self.after_batch()
            if None in batches:
                return

    def _run_alone(self, job: _Job, done: dict[asyncio.AbstractEventLoop, list[_Done]]) -> None:
        fn, args = job[2]
        _hand_back(job, outcome_of(fn, args), done)

    def _run_group(self, group: list[_Job], done: dict[asyncio.AbstractEventLoop, list[_Done]]) -> None:
        try:
            outcomes = self.run_group([job[2] for job in group])
        except BaseException as exc:  # a fault of run_group itself: every unit of the group reports it
            log.exception("a group of database calls failed")
            outcomes = [(None, exc)] * len(group)
        for job, outcome in zip(group, outcomes, strict=True):
            _hand_back(job, outcome, done)


def _nothing() -> None:
    pass


def outcome_of(fn: Callable[..., Any], args: tuple[Any, ...]) -> Outcome:
    """``fn(*args)``'s result, or the exception it raised, whatever it is (the caller gets it)."""
    try:
        return fn(*args), None
    except BaseException as exc:
        return None, exc


def _hand_back(job: _Job, outcome: Outcome, done: dict[asyncio.AbstractEventLoop, list[_Done]]) -> None:
    loop, future, _, _ = job
    result, error = outcome
    if loop is None or future is None:  # posted: nobody to hand the error to
        if error is not None:
            log.error("a queued database write failed", exc_info=error)
        return
    done.setdefault(loop, []).append((future, result, error))


def _settle(outcomes: list[_Done]) -> None:
    for future, result, error in outcomes:
        if future.cancelled():
            continue
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)
