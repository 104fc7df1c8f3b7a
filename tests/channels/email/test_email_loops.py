"""Loops cut: automatic mail is never answered (the bot's own address, auto-replies, lists, bulk mail,
bounces), even from an allowlisted sender; replies to one address are paced, none dropped."""

from __future__ import annotations

import asyncio

import pytest

from bot.channels import Pacer
from tests.channels.email.harness import Serve, wait_for
from tests.channels.email.mails import ANN, mail, passing
from tests.channels.telegram_harness import echo
from tests.fakes.dovecot import BOT, Dovecot
from tests.fakes.scripted_model import ScriptedModel
from tests.fakes.smtp_server import RecordingSmtp

AUTOMATIC = {
    "an out-of-office reply": {"headers": {"Auto-Submitted": "auto-replied"}},
    "a generated notification": {"headers": {"Auto-Submitted": "auto-generated; owner-email=x@example.com"}},
    "an Exchange-style vacation reply": {"headers": {"X-Autoreply": "yes"}},
    "bulk mail": {"headers": {"Precedence": "bulk"}},
    "junk": {"headers": {"Precedence": "junk"}},
    "a vacation reply marked only by Precedence": {"headers": {"Precedence": "auto_reply"}},
    "a robot's loop marker": {"headers": {"X-Loop": "ann@example.com"}},
    "an X-Autorespond reply": {"headers": {"X-Autorespond": "vacation"}},
    "an X-Auto-Reply reply": {"headers": {"X-Auto-Reply": "1"}},
    "a list's mail": {"headers": {"Precedence": "list"}},
    "a list's mail by List-Id": {"headers": {"List-Id": "<friends.lists.example.com>"}},
    "a bounce (empty Return-Path)": {"headers": {"Return-Path": "<>"}},
    "a bounce from the mailer daemon": {
        "sender": "MAILER-DAEMON@example.com",
        "results": [passing(sender="MAILER-DAEMON@example.com")],
    },
    "the bot's own mail": {"sender": f"vaultbot <{BOT}>", "results": [passing("example.org", BOT)]},
}


@pytest.mark.parametrize("case", list(AUTOMATIC))
async def test_automatic_mail_is_never_answered(serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp, case: str) -> None:
    model = ScriptedModel(echo)
    served = await serve(model, allowed_senders=[ANN, BOT, "mailer-daemon@example.com"])
    uid = await asyncio.to_thread(dovecot.deliver, mail("I am away until Monday.", **AUTOMATIC[case]))  # type: ignore[arg-type]
    await wait_for(lambda: dovecot.unseen() == [], "the mail was taken")
    await asyncio.to_thread(dovecot.deliver, mail("hello"))
    [reply] = await asyncio.to_thread(smtp.wait_count, 1)

    assert reply.recipients == [ANN] and len(model.calls) == 1
    assert "away until Monday" not in str(model.calls)
    assert dovecot.flags()[uid] == {"\\Seen"}
    assert await served.app.bus.counts("inbound") == {"done": 1}


async def test_a_person_marking_auto_submitted_no_is_answered(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp
) -> None:
    await serve(ScriptedModel(echo))
    await asyncio.to_thread(dovecot.deliver, mail("typed by hand", headers={"Auto-Submitted": "no"}))
    [reply] = await asyncio.to_thread(smtp.wait_count, 1)
    assert "typed by hand" in reply.text


async def test_the_bots_replies_say_they_are_automatic(serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp) -> None:
    """So that another robot's loop guard cuts the loop at its end too."""
    await serve(ScriptedModel(echo))
    await asyncio.to_thread(dovecot.deliver, mail("hi"))
    [reply] = await asyncio.to_thread(smtp.wait_count, 1)
    assert reply.message["Auto-Submitted"] == "auto-replied"
    assert reply.message["X-Auto-Response-Suppress"] == "All"


class FakeTime:
    """A clock that moves only when told, and a sleep that waits for it to."""

    def __init__(self) -> None:
        self.now = 0.0
        self.moved = asyncio.Event()
        self.sleeping = 0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        until = self.now + seconds
        self.sleeping += 1
        try:
            while self.now < until:
                self.moved.clear()
                await self.moved.wait()
        finally:
            self.sleeping -= 1

    def advance(self, seconds: float) -> None:
        self.now += seconds
        self.moved.set()


async def test_replies_to_one_address_are_paced_30_a_minute_and_none_dropped(
    serve: Serve, dovecot: Dovecot, smtp: RecordingSmtp
) -> None:
    time = FakeTime()
    served = await serve(ScriptedModel(echo), pace=Pacer(clock=time.clock, sleep=time.sleep))
    for n in range(33):
        await asyncio.to_thread(dovecot.deliver, mail(f"mail {n}"))

    await asyncio.to_thread(smtp.wait_count, 30)
    await wait_for(lambda: time.sleeping == 1, "the 31st reply waits for the minute to pass")
    assert len(smtp.received) == 30
    await wait_for(lambda: dovecot.unseen() == [], "every mail was taken")
    deadline = asyncio.get_running_loop().time() + 30
    while (await served.app.bus.counts("inbound")).get("done") != 33:  # the last turn may still be running
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting until every mail's turn was done"
        await asyncio.sleep(0.02)
    assert await served.app.bus.counts("outbound:email") == {"done": 30, "leased": 1, "pending": 2}

    time.advance(59.0)
    await asyncio.sleep(0.2)
    assert len(smtp.received) == 30  # not before a minute has passed since the first
    time.advance(1.0)
    replies = await asyncio.to_thread(smtp.wait_count, 33)
    assert sorted(r.text for r in replies) == sorted(f"You said: Subject: Shopping\nmail {n}" for n in range(33))


async def test_the_pacer_allows_30_in_any_minute() -> None:
    time = FakeTime()
    pacer = Pacer(clock=time.clock, sleep=time.sleep)
    for _ in range(30):
        await asyncio.wait_for(pacer.wait(ANN), 1)
    await asyncio.wait_for(pacer.wait("bob@example.net"), 1)  # another address is not held back
    waiting = asyncio.create_task(pacer.wait(ANN))
    await asyncio.sleep(0.01)
    time.advance(30)
    await asyncio.sleep(0.01)
    assert not waiting.done()
    time.advance(30)
    await asyncio.wait_for(waiting, 1)
