"""A served mail past a reading limit (processor time, memory, wall-clock time) is told which, costs the
reading worker and nothing else, and the next mail is read and answered as ever: the worker is replaced.
(What reading costs per mail: bench/email_latency.py and docs/benchmarks.md.)"""

from __future__ import annotations

import asyncio
from email.message import EmailMessage

import pytest

from bot.channels.email.bounded import Limits
from tests.channels.email.harness import Serve
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
