"""The database's own thread: runs functions one at a time, in order, and hands their results back
to the event loop.

Each hand-off costs a wake-up on both sides (the thread's queue, the loop's self-pipe), which on
the hot path costs more than the SQLite statement itself, and on a busy machine each wake-up can
cost a trip through the OS scheduler. So wake-ups are shared: the calls queued during one pass of
the event loop go to the thread together, the thread runs everything queued by the time it wakes
before it hands back, and it hands back that whole batch in one loop callback. The statements of
many conversations share wake-ups instead of paying two each. (``run_in_executor`` would also add
a ``concurrent.futures.Future``, its ``Condition`` and a callback chain to every call.)
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["DatabaseThread"]

log = logging.getLogger(__name__)

T = TypeVar("T")

# A call waiting to run: where to hand back (nowhere for a posted call), what to run.
_Job = tuple[asyncio.AbstractEventLoop | None, "asyncio.Future[Any] | None", Callable[..., Any], tuple[Any, ...]]
# A finished call: its future, and its result or the exception it raised.
_Done = tuple["asyncio.Future[Any]", Any, BaseException | None]


# Posted calls that ran back to back, each as (function, arguments).
Posted = list[tuple[Callable[..., object], tuple[Any, ...]]]


def run_each(calls: Posted) -> None:
    """Run posted calls one by one, logging (not raising) what fails: the default for posted calls."""
    for fn, args in calls:
        try:
            fn(*args)
        except Exception:
            log.exception("a queued database write failed")


class DatabaseThread:
    """One thread that runs submitted functions in the order they were submitted.

    Posted calls that come next to each other in that order go together to ``run_posted`` (by
    default :func:`run_each`), which may run them as one unit, such as one transaction.
    """

    def __init__(self, name: str, *, run_posted: Callable[[Posted], None] = run_each) -> None:
        self.run_posted = run_posted
        self._jobs: queue.SimpleQueue[list[_Job] | None] = queue.SimpleQueue()
        # Calls queued during this pass of the event loop, not yet handed to the thread.
        self._pending: list[_Job] = []
        self._stopped = False
        # A daemon, so a database left open cannot keep the process from exiting.
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., T], *args: Any) -> asyncio.Future[T]:
        """Queue ``fn(*args)``; the future resolves on the calling loop. Cancelling the future
        does not stop the call: once queued, it runs."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._queue(loop, (loop, future, fn, args))
        return future

    def post(self, fn: Callable[..., object], *args: Any) -> None:
        """Queue ``fn(*args)`` with nobody waiting for it: it runs after everything queued before
        it and before everything queued after it; if it raises, the error is logged."""
        self._queue(asyncio.get_running_loop(), (None, None, fn, args))

    def stop(self) -> None:
        """Let the thread end once the calls queued so far have run; later calls are refused."""
        self._stopped = True
        self._hand_over()
        self._jobs.put(None)

    def _queue(self, loop: asyncio.AbstractEventLoop, job: _Job) -> None:
        self._refuse_if_stopped()
        if not self._pending:
            loop.call_soon(self._hand_over)
        self._pending.append(job)

    def _hand_over(self) -> None:
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
            posted: Posted = []
            for jobs in batches:
                for loop, future, fn, args in jobs or ():
                    if loop is None or future is None:
                        posted.append((fn, args))
                        continue
                    if posted:
                        self._run_posted(posted)
                        posted = []
                    try:
                        outcome: _Done = (future, fn(*args), None)
                    except BaseException as exc:  # handed to the caller, whatever it is
                        outcome = (future, None, exc)
                    done.setdefault(loop, []).append(outcome)
            if posted:
                self._run_posted(posted)
            for loop, outcomes in done.items():
                try:
                    loop.call_soon_threadsafe(_settle, outcomes)
                except RuntimeError:  # the loop is closed: nobody is waiting any more
                    pass
            if None in batches:
                return

    def _run_posted(self, calls: Posted) -> None:
        try:
            self.run_posted(calls)
        except Exception:
            log.exception("queued database writes failed")


def _settle(outcomes: list[_Done]) -> None:
    for future, result, error in outcomes:
        if future.cancelled():
            continue
        if error is None:
            future.set_result(result)
        else:
            future.set_exception(error)
