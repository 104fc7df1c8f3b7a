"""Reading mail in a warm process of its own, within limits of time and memory.

A mail is someone's input, and the ``email`` package, HTML and a mail's nesting can each cost far
more than its size suggests. So mail is read (:func:`bot.channels.email.reading.read_mail`) in one
worker process, kept warm, with an address-space limit (``RLIMIT_AS``, set once at its start), a
processor-time limit per mail (an interval timer on the worker's processor time, and ``RLIMIT_CPU`` just
past it as the backstop for code that never comes back to Python) and a wall-clock deadline the bot
keeps: a mail past any of them costs the worker and nothing else (the bot, its event loop and the
other channels go on), and is :class:`Unreadable`, saying which limit it crossed. A worker that crossed a
limit, or could not read a mail, is ended and replaced by a fresh one, so no mail is read by a process
another mail left in an unknown state.

A mail costs a round trip over a pipe; a worker costs a fork from multiprocessing's fork server, which
has the reading code (and the program's main script) imported already. The waiting happens in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import resource
import signal
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from bot.channels.email.reading import Mail, read_mail

_CONTEXT = multiprocessing.get_context("forkserver")
# bot.cli too: a child first runs the program's main script again (multiprocessing does so for a main
# given by path, as the ``vaultbot`` console script is), and that script imports bot.cli; imported here
# once, the child finds it imported and the run costs nothing.
_CONTEXT.set_forkserver_preload(["bot.cli", "bot.channels.email.reading"])


class Unreadable(Exception):
    """A mail could not be read within its limits (the message says which, in words for a person)."""


@dataclass(frozen=True)
class Limits:
    """What reading one mail may take: ``memory_bytes`` of address space beyond what the worker has at its
    start (the interpreter and the reading code), which holds the mail itself (at most 25 MB)."""

    memory_bytes: int = 768 * 1024 * 1024
    cpu_seconds: float = 20.0
    wall_seconds: float = 60.0


LIMITS = Limits()
_PAST_CPU = "reading it took more than {:g} seconds of processor time"
# Seconds a new worker may take to start (the first waits for the fork server to start: seconds on a
# loaded host).
STARTING_SECONDS = 120.0
# Seconds close() waits for a start that waits on the fork server (a worker being started or reading ends
# at once when killed; a fork server on a loaded host answers within seconds).
CLOSING_SECONDS = 10.0
_READY = b"ready"


class Reader:
    """Reads mail in a warm worker within ``limits``. :meth:`start` it early (the first worker waits for
    the fork server to start), always :meth:`close` it."""

    def __init__(self, limits: Limits = LIMITS) -> None:
        self.limits = limits
        # One use of the worker at a time, and only its holder reads, writes or closes the worker's pipe: a
        # pipe closed under another thread's wait frees its number for a new file, which that wait then reads.
        self._turn = threading.Lock()
        # Held only for moments, never while waiting: what close() must find at once (the worker, even one
        # still starting) and whether it was called.
        self._state = threading.Lock()
        self._worker: _Worker | None = None
        self._closed = False

    async def start(self) -> None:
        """Have a worker ready."""
        await asyncio.to_thread(self._start)

    async def read(self, raw: bytes) -> Mail:
        """``raw`` read within the limits; :class:`Unreadable` when it crossed one."""
        return await asyncio.to_thread(self._read, raw)

    async def close(self) -> None:
        """End the worker whatever it is doing (starting, reading, waiting for mail): a start or a reading
        under way ends with it, and no other starts. Returns once no thread uses the worker, or after
        :data:`CLOSING_SECONDS` when a start still waits for the fork server (that start ends its worker)."""
        with self._state:
            self._closed = True
            worker = self._worker
        if worker is not None:
            worker.kill()  # its pipe is at an end now, so whichever thread waits on it stops waiting
        await asyncio.to_thread(self._finish)

    def _finish(self) -> None:
        if not self._turn.acquire(timeout=CLOSING_SECONDS):
            return
        try:
            with self._state:
                worker, self._worker = self._worker, None
            if worker is not None:
                worker.end()
        finally:
            self._turn.release()

    def _start(self) -> None:
        with self._turn:
            self._ready()

    def _ready(self) -> _Worker:
        """The worker, a new one if there is none or it ended (killed from outside, say); under ``_turn``."""
        with self._state:
            closed, worker = self._closed, self._worker
        if closed:
            raise OSError("the mail reader is closed")
        if worker is not None:
            if worker.process.is_alive():
                return worker
            self._forget(worker)
        worker = _Worker.start(self.limits)
        with self._state:  # published before it is ready, so that close() can end it while it starts
            closed = self._closed
            if not closed:
                self._worker = worker
        try:
            if closed:
                raise OSError("the mail reader is closed")
            worker.wait_ready()
        except OSError:
            self._forget(worker)
            if self._closed:
                raise OSError("the mail reader is closed") from None
            raise
        return worker

    def _forget(self, worker: _Worker) -> None:
        """End ``worker``, and have none until the next is started; under ``_turn``."""
        worker.end()
        with self._state:
            if self._worker is worker:
                self._worker = None

    def _read(self, raw: bytes) -> Mail:
        with self._turn:
            worker = self._ready()
            try:
                return worker.read(raw, self.limits)
            except Unreadable:
                self._forget(worker)
                if self._closed:  # the mail was not what ended it: it stays to be read at the next start
                    raise OSError("the mail reader is closed") from None
                # It crossed a limit or could not read: the next mail gets a fresh worker, started now.
                with contextlib.suppress(OSError):  # else the next mail starts one
                    self._ready()
                raise


@dataclass
class _Worker:
    """One worker process and the bot's end of its pipe. Every wait on the pipe ends when the process
    does (the worker holds the pipe's only other end), so :meth:`kill` ends any of them, from any thread."""

    process: BaseProcess
    conn: Connection

    @classmethod
    def start(cls, limits: Limits) -> _Worker:
        """A worker process started (waits for the fork server, not for the worker: :meth:`wait_ready`)."""
        ours, theirs = _CONTEXT.Pipe()
        process = _CONTEXT.Process(target=_serve, args=(theirs, limits), daemon=True, name="vaultbot-email-reader")
        try:
            process.start()
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return cls(process, ours)

    def wait_ready(self) -> None:
        """Return once the worker has set its limits (a mail's wall-clock time is its reading's, never the
        start's); :class:`OSError` when it ended first or took longer than :data:`STARTING_SECONDS`."""
        try:
            came = self.conn.poll(STARTING_SECONDS)
            ready = came and self.conn.recv_bytes() == _READY
        except (EOFError, OSError):
            came, ready = True, False
        if not ready:
            self.end()
            if not came:
                raise OSError(f"the mail reader did not start within {STARTING_SECONDS:g} s")
            raise OSError(f"the mail reader ended as it started (exit {self.process.exitcode})")

    def read(self, raw: bytes, limits: Limits) -> Mail:
        with contextlib.suppress(OSError):  # the worker stopped reading it: its answer says why
            self.conn.send_bytes(raw)
        try:
            if not self.conn.poll(limits.wall_seconds):
                raise Unreadable(f"reading it took longer than {limits.wall_seconds:g} seconds")
            status, value = self.conn.recv()
        except (EOFError, OSError):  # the worker ended without an answer: a limit the kernel enforces
            self.process.join(5)
            if self.process.exitcode == -signal.SIGXCPU:
                raise Unreadable(_PAST_CPU.format(limits.cpu_seconds)) from None
            raise Unreadable(f"reading it ended the reader (exit {self.process.exitcode})") from None
        if status == "memory":
            raise Unreadable(f"reading it needed more than {limits.memory_bytes // 1_048_576} MB of memory")
        if status == "time":
            raise Unreadable(_PAST_CPU.format(limits.cpu_seconds))
        if status == "error":
            raise Unreadable(str(value))
        assert isinstance(value, Mail)
        return value

    def kill(self) -> None:
        """Kill the process (from any thread, at once: it waits for nothing)."""
        self.process.kill()

    def end(self) -> None:
        """Kill the process, wait for it, then close the pipe (only by the thread whose turn it is)."""
        self.kill()
        self.process.join(5)
        self.conn.close()


def _serve(conn: Connection, limits: Limits) -> None:
    """In the worker: set the memory limit, then read each mail sent until the bot hangs up, or until a
    mail was not read (the bot ends this worker then, and starts another)."""
    most = _address_space() + limits.memory_bytes
    _lower(resource.RLIMIT_AS, most, most)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGPROF, _time_up)
    signal.signal(signal.SIGXCPU, signal.SIG_DFL)  # the backstop ends the worker
    conn.send_bytes(_READY)
    status = "ok"
    while status == "ok":
        try:
            raw = conn.recv_bytes()
        except (EOFError, OSError):
            return
        except MemoryError:
            status, value = "memory", None
        else:
            status, value = _read_one(raw, limits)
            del raw
        try:
            conn.send((status, value))
        except MemoryError:
            status = "memory"
            _send(conn, (status, None))
        del value


def _read_one(raw: bytes, limits: Limits) -> tuple[str, object]:
    """What came of reading ``raw``, within the processor time of one mail."""
    used = _processor_seconds()
    # The backstop, for code that never comes back to Python to see the timer: the kernel ends the worker
    # 2 s past the mail's time (the hard limit stays as it was, so the next mail can move it on).
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    backstop = int(used + limits.cpu_seconds) + 2
    if hard != resource.RLIM_INFINITY:
        backstop = min(backstop, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (backstop, hard))
    try:
        signal.setitimer(signal.ITIMER_PROF, limits.cpu_seconds)
        try:
            mail = read_mail(raw)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        return "ok", mail
    except MemoryError:
        return "memory", None
    except _TimeUp:
        return "time", None
    except RecursionError:
        return "error", "it nests parts too deep"
    except Exception as exc:  # any mail that this code cannot read is said to be, never raised at the bot
        return "error", f"this code could not read it ({type(exc).__name__})"


def _processor_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _address_space() -> int:
    """This process's address space now, in bytes (Linux)."""
    with open("/proc/self/status", encoding="ascii") as status:
        size = next(line for line in status if line.startswith("VmSize:"))
    return int(size.split()[1]) * 1024


def _lower(which: int, soft: int, hard: int) -> None:
    """Set a limit, never above the one the bot runs under (a process may only lower its hard limit)."""
    _, current = resource.getrlimit(which)
    if current != resource.RLIM_INFINITY:
        soft, hard = min(soft, current), min(hard, current)
    resource.setrlimit(which, (soft, hard))


class _TimeUp(BaseException):
    """Processor time ran out (a BaseException, so that a library's ``except Exception`` lets it pass)."""


def _time_up(_signal: int, _frame: object) -> None:
    raise _TimeUp


def _send(answer: Connection, message: tuple[str, object]) -> None:
    with contextlib.suppress(Exception):
        answer.send(message)
