"""Reading a mail in a process of its own, within limits of time and memory.

A mail is someone's input, and the ``email`` package, HTML and a mail's nesting can each cost far
more than its size suggests. So each mail is read (:func:`bot.channels.email.reading.read_mail`) in a
child process with an address-space limit (``RLIMIT_AS``), a processor-time limit (``RLIMIT_CPU``) and
a wall-clock deadline: a mail past any of them costs its own child and nothing else (the bot, its
event loop and the other channels go on), and is :class:`Unreadable`, saying which limit it crossed.

The children come from multiprocessing's fork server, which has the reading code (and the program's main
script) imported already, so a reading costs a fork (a few milliseconds), not the start of a Python.
The wait happens in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import resource
import signal
from dataclasses import dataclass
from multiprocessing.connection import Connection

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
    """What reading one mail may take: ``memory_bytes`` of address space beyond what the child has at its
    start (the interpreter and the reading code), which holds the mail itself (at most 25 MB)."""

    memory_bytes: int = 768 * 1024 * 1024
    cpu_seconds: int = 20
    wall_seconds: float = 60.0


LIMITS = Limits()


async def read_bounded(raw: bytes, limits: Limits) -> Mail:
    """``raw`` read in a child within ``limits``; :class:`Unreadable` when it crossed one."""
    return await asyncio.to_thread(_read_in_child, raw, limits)


def _read_in_child(raw: bytes, limits: Limits) -> Mail:
    receiving, sending = _CONTEXT.Pipe(duplex=False)
    child = _CONTEXT.Process(target=_child, args=(sending, raw, limits), daemon=True)
    child.start()
    sending.close()
    try:
        if not receiving.poll(limits.wall_seconds):
            raise Unreadable(f"reading it took longer than {limits.wall_seconds:g} seconds")
        try:
            status, value = receiving.recv()
        except EOFError:  # the child ended without an answer: a limit the kernel enforces
            child.join(5)
            if child.exitcode in (-signal.SIGXCPU, -signal.SIGKILL):
                raise Unreadable(f"reading it took more than {limits.cpu_seconds} seconds of processor time") from None
            raise Unreadable(f"reading it ended the reader (exit {child.exitcode})") from None
    finally:
        receiving.close()
        if child.is_alive():
            child.kill()
        child.join(5)
    if status == "memory":
        raise Unreadable(f"reading it needed more than {limits.memory_bytes // 1_048_576} MB of memory")
    if status == "time":
        raise Unreadable(f"reading it took more than {limits.cpu_seconds} seconds of processor time")
    if status == "error":
        raise Unreadable(str(value))
    assert isinstance(value, Mail)
    return value


def _child(answer: Connection, raw: bytes, limits: Limits) -> None:
    """In the child: set the limits, read, send back what came of it."""
    most = _address_space() + limits.memory_bytes
    _lower(resource.RLIMIT_AS, most, most)
    _lower(resource.RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 2)
    # The soft CPU limit's signal is a Python exception here, so an answer goes back; the hard one kills.
    signal.signal(signal.SIGXCPU, _time_up)
    try:
        answer.send(("ok", read_mail(raw)))
    except MemoryError:
        _send(answer, ("memory", None))
    except _TimeUp:
        _send(answer, ("time", None))
    except RecursionError:
        _send(answer, ("error", "it nests parts too deep"))
    except Exception as exc:  # any mail that this code cannot read is said to be, never raised at the bot
        _send(answer, ("error", f"this code could not read it ({type(exc).__name__})"))
    finally:
        answer.close()


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
