"""A served mail past a reading limit (processor time, memory, wall-clock time) is told which, costs the
reading worker and nothing else, and the next mail is read and answered as ever: the worker is replaced.
(What reading costs per mail: bench/email_latency.py and docs/benchmarks.md.)"""

from __future__ import annotations

import asyncio
import os
import signal
from email.message import EmailMessage
from multiprocessing import forkserver
from pathlib import Path

import pytest

from bot.channels.email.bounded import Limits, Reader, Unreadable
from tests.channels.email.harness import Serve, wait_for
from tests.channels.email.mails import ANN, mail, passing
from tests.channels.email.test_email_bombs import nested_lists
from tests.channels.telegram_harness import echo
from tests.fakes.dovecot import Dovecot
from tests.fakes.scripted_model import ScriptedModel
from tests.fakes.smtp_server import RecordingSmtp


def eight_megabytes() -> bytes:
    """Ann's mail with an 8 MB file: reading it needs far more than 32 MB."""
    message = EmailMessage()
    message["Authentication-Results"] = passing("example.com", ANN)
    message["From"] = f"Ann <{ANN}>"
    message["Subject"] = "the scan"
    message.set_content("attached")
    message.add_attachment(b"\x00" * 8_000_000, maintype="application", subtype="octet-stream", filename="scan.bin")
    return bytes(message)


def lists() -> bytes:
    """Ann's mail of nested-list HTML: about half a second of processor time to read."""
    return mail("", html=nested_lists(), subject="lists")


def long_lists() -> bytes:
    """Ann's mail of some 900 KB of nested-list HTML: a few seconds of processor time to read."""
    return mail("", html="<ul>" * 64_000 + "<li>x" * 64_000 + "</ul>" * 64_000, subject="lists")


# Each limit, a mail past it and what its sender is told. A plain mail takes a millisecond of processor
# time and a few megabytes.
PAST = {
    "processor time": (Limits(cpu_seconds=0.05), lists, "reading it took more than 0.05 seconds of processor time"),
    "memory": (Limits(memory_bytes=32 * 1024 * 1024), eight_megabytes, "reading it needed more than 32 MB of memory"),
    "wall-clock time": (Limits(wall_seconds=0.5), long_lists, "reading it took longer than 0.5 seconds"),
}


@pytest.mark.parametrize("limit", list(PAST))
async def test_a_mail_past_a_limit_is_told_which_and_the_next_mails_are_answered(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp, limit: str
) -> None:
    limits, bomb, said = PAST[limit]
    model = ScriptedModel(echo)
    await serve(model, limits=limits)
    await asyncio.to_thread(dovecot.deliver, bomb())
    [first] = [reply.text for reply in await asyncio.to_thread(smtp.wait_count, 1)]
    assert f"I could not read it: {said}" in first
    for text in ("after it", "and again"):  # read by the worker that replaced the one the bomb cost
        await asyncio.to_thread(dovecot.deliver, mail(text))
    replies = [reply.text for reply in await asyncio.to_thread(smtp.wait_count, 3)]
    assert replies[1].endswith("after it") and replies[2].endswith("and again")
    assert len(model.calls) == 2  # the mail past its limit never reaches the model
    assert dovecot.unseen() == []


def workers() -> set[int]:
    """The reading workers alive now: the fork server's children (a worker ended and waited for is gone)."""
    server = forkserver._forkserver._forkserver_pid
    if server is None:
        return set()
    try:
        return {int(pid) for pid in Path(f"/proc/{server}/task/{server}/children").read_text().split()}
    except FileNotFoundError:
        return set()


async def a_new_worker(before: set[int]) -> int:
    """The pid of the one worker started since ``before`` was seen."""
    await wait_for(lambda: len(workers() - before) == 1, "a worker started")
    [pid] = workers() - before
    return pid


async def test_a_reader_closed_while_its_worker_starts_ends_it_and_returns() -> None:
    """The worker is held as it starts (stopped, most often before it says it is ready): closing the reader
    ends it all the same, and no thread is left waiting for it."""
    before = workers()
    reader = Reader()
    starting = asyncio.create_task(reader.start())
    os.kill(await a_new_worker(before), signal.SIGSTOP)
    await asyncio.wait_for(reader.close(), 30)
    [started] = await asyncio.wait_for(asyncio.gather(starting, return_exceptions=True), 30)
    assert started is None or "the mail reader is closed" in str(started)
    assert workers() - before == set()
    with pytest.raises(OSError, match="closed"):
        await reader.read(mail("after the close"))


@pytest.mark.parametrize("size", ["small", "past the pipe's buffer"])
async def test_a_reader_closed_while_a_mail_is_read_ends_the_worker_and_the_mail_stays_to_read(size: str) -> None:
    """The worker is held mid-mail (stopped; a large mail is not even all sent): closing the reader ends
    it, and the mail is not said to be unreadable (the channel keeps it unseen for the next start)."""
    before = workers()
    reader = Reader()
    await reader.start()
    os.kill(await a_new_worker(before), signal.SIGSTOP)
    raw = mail("held") if size == "small" else long_lists()
    reading = asyncio.create_task(reader.read(raw))
    await wait_for(reader._turn.locked, "the mail went to the worker")
    await asyncio.wait_for(reader.close(), 30)
    with pytest.raises(OSError, match="closed"):
        await asyncio.wait_for(reading, 30)
    assert workers() - before == set()


async def test_a_worker_killed_mid_mail_is_told_and_replaced() -> None:
    before = workers()
    reader = Reader()
    try:
        await reader.start()
        pid = await a_new_worker(before)
        os.kill(pid, signal.SIGSTOP)
        reading = asyncio.create_task(reader.read(mail("held")))
        await wait_for(reader._turn.locked, "the mail went to the worker")
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(Unreadable, match=r"ended the reader \(exit -9\)"):
            await asyncio.wait_for(reading, 30)
        read = await asyncio.wait_for(reader.read(mail("the next one")), 60)
        assert "the next one" in read.text
    finally:
        await asyncio.wait_for(reader.close(), 30)
    assert workers() - before == set()
