"""Mail bombs cost their own mail, never the bot: `vaultbot run` under a memory limit takes strangers'
bombs (read no further than their bounded header) and Ann's (read in a child within its own limits of
memory and time) and goes on serving. Figures for each bomb: bench/email_bombs.py and docs/email.md."""

from __future__ import annotations

import re
import resource
import signal
from email.message import EmailMessage
from pathlib import Path

import pytest

from tests.channels.email.harness import email_env
from tests.channels.email.mails import ANN, mail, passing
from tests.channels.telegram_harness import RunVaultbot, stop, wait_until
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.dovecot import Dovecot
from tests.fakes.smtp_server import RecordingSmtp

STRANGER = "Mallory <mallory@evil.example>"
# What the bot may grow by while it takes them: the code before took 2.7 GB more for the Subject alone.
HEADROOM = 400 * 1024 * 1024


def nested_lists() -> str:
    return "<ul>" * 8_000 + "<li>x" * 8_000 + "</ul>" * 8_000


def many_files(sender: str, results: list[str]) -> bytes:
    message = EmailMessage()
    message["Authentication-Results"] = results[0]
    message["From"] = sender
    message["Subject"] = "files"
    message.set_content("see attached")
    for n in range(5_000):
        message.add_attachment(b"x", maintype="application", subtype="octet-stream", filename=f"{n}.bin")
    return bytes(message)


def bombs(sender: str) -> list[bytes]:
    """Mail that once cost the bot far more than its size, from ``sender``."""
    domain = re.search(r"@([^>]+)>", sender).group(1)  # type: ignore[union-attr]
    address = re.search(r"<(.+)>", sender).group(1)  # type: ignore[union-attr]
    results = [passing(domain, address)]
    return [
        b"Subject: " + b"a " * 140_000 + b"\n" + mail("hi", sender=sender, results=results),
        mail("", html=nested_lists(), sender=sender, results=results, subject="lists"),
        mail("On the list\n" * 8_000, sender=sender, results=results, subject="On"),
        mail("x", sender=sender, results=results, subject="deep").replace(b"x\n", b"On x wrote:\n" * 2_000),
        many_files(sender, results),
    ]


def vm_size(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmSize:\s+(\d+)", status).group(1)) * 1024  # type: ignore[union-attr]


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_bombs_from_strangers_and_from_ann_leave_the_bot_serving_under_a_memory_limit(
    vaultbot_run: RunVaultbot, fake_anthropic: FakeAnthropic, smtp: RecordingSmtp, dovecot: Dovecot
) -> None:
    fake_anthropic.handler = lambda body: api.text("Noted.")
    env = {
        **email_env(dovecot, smtp),
        "ANTHROPIC_API_KEY": "sk-ant-bombs",
        "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
    }
    process = vaultbot_run(**env)
    dovecot.deliver(mail("first"))
    wait_until(lambda: len(smtp.received) == 1, "the first mail was answered", process)
    limit = vm_size(process.pid) + HEADROOM
    resource.prlimit(process.pid, resource.RLIMIT_AS, (limit, limit))

    for raw in bombs(STRANGER):
        dovecot.deliver(raw)
    for raw in bombs(f"Ann <{ANN}>"):
        dovecot.deliver(raw)
    dovecot.deliver(mail("still there?"))
    wait_until(lambda: dovecot.unseen() == [], "every mail was taken", process, timeout=150)
    # Ann's first mail, four of her bombs and her last mail: each answered once. Her 280 KB Subject makes a
    # header past the 64 KB read of it: refused unread, as anyone's.
    wait_until(lambda: len(smtp.received) == 6, "Ann's mails were answered", process, timeout=60)

    assert process.poll() is None  # alive: never killed for memory
    assert all(r.recipients == [ANN] for r in smtp.received)  # no stranger is answered
    asked = str([request.body for request in fake_anthropic.requests])
    assert "still there?" in asked and "mallory" not in asked.lower()
    assert dovecot.unseen() == [] and len(smtp.received) == 6
    stop(process, signal.SIGTERM)
