"""A served mail past a reading limit (processor time, memory, wall-clock time) is told which, costs the
reading worker and nothing else, and the next mail is read and answered as ever: the worker is replaced.
(What reading costs per mail: bench/email_latency.py and docs/benchmarks.md.)"""

from __future__ import annotations

import asyncio
from email.message import EmailMessage

from bot.channels.email.bounded import Limits
from tests.channels.email.harness import Serve
from tests.channels.email.mails import ANN, mail, passing
from tests.channels.email.test_email_bombs import nested_lists
from tests.channels.telegram_harness import echo
from tests.fakes.dovecot import Dovecot
from tests.fakes.scripted_model import ScriptedModel
from tests.fakes.smtp_server import RecordingSmtp

# The nested-list HTML takes about half a second of processor time to read; a plain mail a millisecond.
TIGHT = Limits(memory_bytes=32 * 1024 * 1024, cpu_seconds=0.05, wall_seconds=60.0)


def eight_megabytes() -> bytes:
    """Ann's mail with an 8 MB file: reading it needs far more than 32 MB."""
    message = EmailMessage()
    message["Authentication-Results"] = passing("example.com", ANN)
    message["From"] = f"Ann <{ANN}>"
    message["Subject"] = "the scan"
    message.set_content("attached")
    message.add_attachment(b"\x00" * 8_000_000, maintype="application", subtype="octet-stream", filename="scan.bin")
    return bytes(message)


def long_lists() -> str:
    """Nested-list HTML of about 900 KB: some 2.5 s of processor time to read."""
    return "<ul>" * 64_000 + "<li>x" * 64_000 + "</ul>" * 64_000


async def told(smtp: RecordingSmtp, count: int) -> list[str]:
    return [reply.text for reply in await asyncio.to_thread(smtp.wait_count, count)]


async def test_mails_past_the_processor_and_memory_limits_are_told_and_the_next_is_answered(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp
) -> None:
    model = ScriptedModel(echo)
    await serve(model, limits=TIGHT)
    await asyncio.to_thread(dovecot.deliver, mail("", html=nested_lists(), subject="lists"))
    [first] = await told(smtp, 1)
    assert "I could not read it: reading it took more than 0.05 seconds of processor time" in first
    await asyncio.to_thread(dovecot.deliver, mail("after the lists"))
    assert (await told(smtp, 2))[1].endswith("after the lists")

    await asyncio.to_thread(dovecot.deliver, eight_megabytes())
    third = (await told(smtp, 3))[2]
    assert "I could not read it: reading it needed more than 32 MB of memory" in third
    await asyncio.to_thread(dovecot.deliver, mail("after the scan"))
    assert (await told(smtp, 4))[3].endswith("after the scan")
    assert len(model.calls) == 2  # the two mails read; the two past a limit never reach the model
    assert dovecot.unseen() == []


async def test_a_mail_past_the_wall_clock_limit_is_told_and_the_next_is_answered(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp
) -> None:
    await serve(ScriptedModel(echo), limits=Limits(cpu_seconds=20.0, wall_seconds=0.5))
    await asyncio.to_thread(dovecot.deliver, mail("", html=long_lists(), subject="lists"))
    await asyncio.to_thread(dovecot.deliver, mail("still there?"))
    replies = await told(smtp, 2)
    assert "I could not read it: reading it took longer than 0.5 seconds" in replies[0]
    assert replies[1].endswith("still there?")
