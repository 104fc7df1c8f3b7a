"""Sending a long reply: a send that fails part-way is retried from the chunk that failed, so the
user sees every chunk exactly once, in order."""

from __future__ import annotations

import asyncio

import pytest

from bot.channels import Pacer
from bot.channels.telegram.render import render
from tests.channels.telegram_harness import Serve
from tests.fakes import telegram_server as tg
from tests.fakes.scripted_model import ScriptedModel, say

REPLY = "\n\n".join(f"Part {n}. " + f"Sentence {n} of a long answer. " * 100 for n in (1, 2, 3))


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param((500, "Internal Server Error", None), id="500"),
        pytest.param((429, "Too Many Requests: retry after 1", 1), id="429"),
    ],
)
async def test_a_retried_send_resumes_after_the_last_chunk_sent(serve: Serve, fault: tuple[int, str, int]) -> None:
    chunks = [chunk.text for chunk in render(REPLY)]
    assert len(chunks) == 3
    served = await serve(ScriptedModel(lambda messages: say(REPLY)))
    status, description, retry_after = fault
    served.fake.fail_next("sendMessage", status, description, retry_after=retry_after, skip=1)
    served.fake.push_update(tg.text_update("tell me everything"))
    await served.fake.await_for(lambda f: len(f.sent) >= 3)
    assert served.fake.sent_texts == chunks
    assert len(served.fake.calls("sendMessage")) == 4  # the failed second chunk was tried twice


class PacerTime:
    """The pacer's own clock: it moves only when the pacer waits, so what the pacing decides is measured
    apart from how fast this machine sends (a loaded machine delivers two requests closer together)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


async def test_the_chunks_of_a_long_reply_are_paced_to_stay_under_telegrams_limit(serve: Serve) -> None:
    # Telegram takes about one message a second per chat; sent faster, the user waits out 429s instead.
    time = PacerTime()
    served = await serve(
        ScriptedModel(lambda messages: say(REPLY)), pace=Pacer(0.5, clock=time.clock, sleep=time.sleep)
    )
    served.fake.push_update(tg.text_update("tell me everything"))
    await served.fake.await_for(lambda f: len(f.sent) >= 3)
    assert served.fake.sent_texts == [chunk.text for chunk in render(REPLY)]
    # The first chunk goes at once; each later one waits out the whole pace since the one before.
    assert time.waits == [0.5, 0.5]
    # Paced, not failed and retried: a reply of more chunks than attempts must not be dead-lettered.
    [outbound] = await served.app.db.fetchall(
        "SELECT attempts, last_error FROM bus_messages WHERE topic LIKE 'outbound:%'"
    )
    assert (outbound["attempts"], outbound["last_error"]) == (1, None)


async def test_a_429_is_retried_no_sooner_than_telegram_asked(serve: Serve) -> None:
    # Sooner would only earn another 429; the worker's own first backoff (at most 1 s) must not replace it.
    served = await serve(ScriptedModel(lambda messages: say("Noted.")))
    served.fake.fail_next("sendMessage", 429, "Too Many Requests: retry after 2", retry_after=2)
    served.fake.push_update(tg.text_update("slow down"))
    await served.fake.await_for(lambda f: len(f.sent) == 1)
    refused, accepted = served.fake.calls("sendMessage")
    assert accepted.at - refused.at >= 2
