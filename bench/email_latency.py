"""E-mail latency: a mail appended to the mailbox → its reply accepted by the SMTP server.

A real Dovecot (IDLE) and aiosmtpd on 127.0.0.1 (the tests' own: tests/fakes; aiosmtpd in a process of
its own, as a mail server is, so that it does not share this one's interpreter lock), the real e-mail
channel, runner, SQLite file and vault, and a zero-latency scripted model in-process. Mails go one at a time,
each from a sender of its own (so the pace of 30 replies a minute to one address does not enter the
figures), each after the previous reply came.

Two figures per mail: from the APPEND's completion (what a sender would see), and from the moment the
server's IDLE push reached the channel to the reply's acceptance: vaultbot's own time (fetch, parse,
store, the turn, compose, SMTP), without the server's delay in telling its IDLE clients (Dovecot waits
about half a second to gather changes before it says so). A third figure, the CPU time this process
spends from the push to seeing the reply accepted, is what a loaded shared host moves least.

    .venv/bin/python bench/email_latency.py [--mails 50]

It needs Dovecot (apt-get install dovecot-imapd) and aiosmtpd, which the test extra installs
(.venv/bin/pip install -e '.[test]'); without them it says so and stops.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
if importlib.util.find_spec("aiosmtpd") is None:
    raise SystemExit("bench/email_latency.py needs aiosmtpd, a test dependency: .venv/bin/pip install -e '.[test]'")

from bot.app import App  # noqa: E402
from bot.channels import Pacer  # noqa: E402
from bot.channels.email import EmailChannel  # noqa: E402
from bot.channels.email.imap import Mailbox  # noqa: E402
from bot.settings import Settings  # noqa: E402
from tests.channels.email.harness import email_settings  # noqa: E402
from tests.channels.email.mails import TRUSTED, mail  # noqa: E402
from tests.fakes.dovecot import Dovecot  # noqa: E402
from tests.fakes.scripted_model import ScriptedModel, say  # noqa: E402


class SmtpAt:
    """What email_settings reads of an SMTP server: its port and users (the bot's account)."""

    def __init__(self, port: int) -> None:
        self.port = port


ROOT = Path(__file__).resolve().parents[1]
# The SMTP server's process: it prints its port, then the time (time.monotonic(), the same clock in every
# process) at which it accepted each mail.
SMTP_SERVER = f"""
import sys
sys.path.insert(0, {str(ROOT)!r})
from tests.fakes.smtp_server import RecordingSmtp
with RecordingSmtp() as smtp:
    print(smtp.port, flush=True)
    while True:
        seen = len(smtp.received)
        smtp.wait_count(seen + 1, timeout=3600)
        for mail in smtp.received[seen:]:
            print(mail.at, flush=True)
"""


T = TypeVar("T")
# How long one step may take before the bench gives up saying which (a loaded host is slow, not stuck).
STEP_SECONDS = 120.0


async def within(step: str, waited: Awaitable[T]) -> T:
    """What ``waited`` gives, or SystemExit naming ``step`` when it takes longer than STEP_SECONDS."""
    try:
        return await asyncio.wait_for(waited, STEP_SECONDS)
    except TimeoutError:
        raise SystemExit(f"email_latency: gave up waiting {STEP_SECONDS:g} s for {step}") from None


def sender(n: int) -> str:
    return f"person{n}@example.com"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mails", type=int, default=50)
    args = parser.parse_args()
    pushed: list[tuple[float, float]] = []  # (wall clock, this process's CPU time) when a push arrived
    idling = asyncio.Event()  # the channel is waiting for the server's push
    waiting = Mailbox.wait

    async def timed_wait(self: Mailbox, stopping: asyncio.Event, poll: float) -> None:
        idling.set()
        await waiting(self, stopping, poll)
        idling.clear()
        pushed.append((time.monotonic(), time.process_time()))

    Mailbox.wait = timed_wait  # type: ignore[method-assign]
    smtp = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SMTP_SERVER, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    assert smtp.stdout is not None and smtp.stderr is not None
    total: list[float] = []
    own: list[float] = []
    cpu: list[float] = []
    try:
        line = await within("the SMTP server to start", smtp.stdout.readline())
        if not line:
            raise SystemExit(f"email_latency: the SMTP server did not start: {(await smtp.stderr.read()).decode()}")
        await _measure(args.mails, int(line), smtp.stdout, pushed, idling, (total, own, cpu))
    finally:
        smtp.kill()
        await smtp.wait()
    missed = len(total) - len(own)
    if missed:
        print(f"{missed} mail(s) were found before the server's push: only their first figure counts")
    for name, figures in (
        ("appended → reply accepted", total),
        ("IDLE push → reply accepted", own),
        ("CPU time of this process, IDLE push → reply seen", cpu),
    ):
        if not figures:
            continue
        ordered = sorted(figures)
        p95 = ordered[int(len(ordered) * 0.95) - 1]
        print(f"{name}: p50 {statistics.median(figures):.1f} ms, p95 {p95:.1f} ms, max {max(figures):.1f} ms")


async def _measure(
    mails: int,
    port: int,
    accepted_at: asyncio.StreamReader,
    pushed: list[tuple[float, float]],
    idling: asyncio.Event,
    into: tuple[list[float], list[float], list[float]],
) -> None:
    """Send ``mails`` one at a time, each once the channel waits for the server's push, and put the
    figures ``into`` (total, own, cpu); the channel and worker are stopped however it ends."""
    total, own, cpu = into
    with tempfile.TemporaryDirectory() as tmp, Dovecot() as dovecot:
        senders = [sender(n) for n in range(mails)]
        section = email_settings(dovecot, SmtpAt(port), allowed_senders=senders)  # type: ignore[arg-type]
        settings = Settings(
            _env_file=None,
            vault={"path": Path(tmp) / "vault", "search_by_meaning": False},
            store={"path": Path(tmp) / "vaultbot.db"},
            email=section,
        )
        app = await App.open(settings, model=ScriptedModel(lambda messages: say("noted")))
        channel = EmailChannel(
            settings.email, db=app.db, bus=app.bus, store=app.store, notes=app.notes, pace=Pacer(most=10**6)
        )
        worker = app.runner_worker()
        tasks = [asyncio.create_task(channel.run()), asyncio.create_task(worker.run())]
        try:
            for n in range(mails):
                await within("the channel to wait for the server's push", idling.wait())
                results = [f"{TRUSTED}; dkim=pass header.d=example.com; spf=pass smtp.mailfrom={sender(n)}"]
                raw = mail(f"note {n}", sender=sender(n), results=results)
                before = len(pushed)
                await asyncio.to_thread(dovecot.deliver, raw)
                appended = time.monotonic()
                line = await within(f"the reply to mail {n}", accepted_at.readline())
                spent = time.process_time()
                total.append((float(line) - appended) * 1000)
                if len(pushed) > before:  # else the channel found it on its own look, before the push
                    own.append((float(line) - pushed[before][0]) * 1000)
                    cpu.append((spent - pushed[before][1]) * 1000)
        finally:
            await channel.stop()
            await worker.stop()
            await asyncio.gather(*tasks, return_exceptions=True)
            await app.close()


if __name__ == "__main__":
    # Mail is read in a worker forked by multiprocessing's fork server, and a worker first runs the main
    # script again (bot/channels/email/bounded.py). `vaultbot run`'s script imports bot.cli, which the fork server
    # has imported; this script's imports are given to it the same way, so the figures are vaultbot's.
    multiprocessing.get_context("forkserver").set_forkserver_preload(
        ["bot.cli", "bot.channels.email.reading", *(name for name in sys.modules if name.startswith("tests."))]
    )
    asyncio.run(main())
