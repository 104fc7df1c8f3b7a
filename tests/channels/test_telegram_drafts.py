"""A reply grows in the chat as the model writes it (sendMessageDraft), then is sent once as a real
message. Real ptb and the real anthropic SDK, against the fake Bot API and a streaming fake
Messages API."""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.bus import INBOUND
from bot.channels.telegram.render import render
from bot.runner import AnthropicModel
from tests.channels.telegram_harness import ANN, RunVaultbot, Serve, bus_statuses, stop, wait_until
from tests.channels.test_telegram_crash import inbound_statuses, start
from tests.fakes import anthropic_server as api
from tests.fakes import telegram_server as tg
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.telegram_server import FakeTelegram
from tests.helpers import SEVERAL_PROCESSES

ANSWER = " ".join(f"word{i}" for i in range(60))  # 60 words, about 400 characters, no Markdown


@pytest.fixture
async def claude(fake_anthropic: FakeAnthropic) -> AsyncIterator[AnthropicModel]:
    model = AnthropicModel(
        api_key="sk-ant-drafts", base_url=fake_anthropic.base_url, model="claude-test", max_tokens=1024, max_retries=0
    )
    yield model
    await model.close()


class Gate:
    """Holds a streamed answer before each delta until the test lets it through."""

    def __init__(self) -> None:
        self.allowed = 0
        self._cond = threading.Condition()

    def allow(self, deltas: int) -> None:
        with self._cond:
            self.allowed = deltas
            self._cond.notify_all()

    def __call__(self, index: int) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self.allowed > index, timeout=30)


def sends(fake: FakeTelegram) -> list[str]:
    """The bot's outgoing messages and drafts, in the order Telegram received them."""
    return [r.method for r in fake.requests if r.method in ("sendMessage", "sendMessageDraft")]


async def test_a_streamed_answer_grows_as_drafts_then_is_sent_once(
    serve: Serve, fake: FakeTelegram, fake_anthropic: FakeAnthropic, claude: AnthropicModel
) -> None:
    gate = Gate()
    fake_anthropic.enqueue(api.streamed(api.text(ANSWER), delta_chars=40, pace=gate))
    await serve(claude, draft_interval=0.01)
    fake.push_update(tg.text_update("tell me sixty words"))
    deltas = -(-len(ANSWER) // 40)
    # Each delta but the last is shown before the next is written; the last one ends the stream,
    # and the real message may replace the draft before a draft of it goes out.
    for written in range(1, deltas):
        gate.allow(written)
        shown = ANSWER[: 40 * written].rstrip()
        await fake.await_for(lambda f, shown=shown: bool(f.drafts) and f.drafts[-1]["text"] == shown)
    gate.allow(deltas)
    await fake.await_for(lambda f: len(f.sent) == 1)

    texts = [d["text"] for d in fake.drafts]
    assert len(texts) >= deltas - 1  # it grew in steps, not at once
    assert all(later.startswith(earlier) for earlier, later in zip(texts, texts[1:], strict=False))
    assert {d["chat_id"] for d in fake.drafts} == {ANN}
    assert len({d["draft_id"] for d in fake.drafts}) == 1  # one draft, updated in place
    assert fake.sent_texts == [ANSWER]
    assert sends(fake)[-1] == "sendMessage"  # no draft after the real message: it would show again


async def test_a_draft_still_on_the_wire_when_the_run_ends_lands_before_the_reply(
    serve: Serve, fake: FakeTelegram, fake_anthropic: FakeAnthropic, claude: AnthropicModel
) -> None:
    # A draft that reached Telegram after the real message would show the answer a second time
    # under it: the reply waits for the draft already sent.
    gate = Gate()
    fake_anthropic.enqueue(api.streamed(api.text(ANSWER), delta_chars=40, pace=gate))
    held = fake.hold("sendMessageDraft")
    served = await serve(claude, draft_interval=0.01)
    fake.push_update(tg.text_update("tell me sixty words"))
    gate.allow(1)
    assert await asyncio.to_thread(held.reached.wait, 10), "no draft was sent"
    gate.allow(len(ANSWER))  # the run ends while its first draft is still on the wire
    deadline = time.monotonic() + 10
    while "leased" not in (counts := await served.app.bus.counts("outbound:telegram")) and "done" not in counts:
        assert time.monotonic() < deadline, "the reply was not picked up for sending"  # nor sent
        await asyncio.sleep(0.01)
    held.release()
    await fake.await_for(lambda f: len(f.sent) == 1 and len(f.drafts) >= 1)

    assert fake.calls("sendMessage")[0].at >= fake.drafts[0]["at"]  # arrived after the held draft was done
    assert len(fake.drafts) == 1  # the held one: the run was settled before another could go out
    assert fake.sent_texts == [ANSWER]


async def test_drafts_of_one_answer_are_at_least_the_interval_apart(
    serve: Serve, fake: FakeTelegram, fake_anthropic: FakeAnthropic, claude: AnthropicModel
) -> None:
    # The model writes a delta every 20 ms for about a second; drafts may go out every 0.25 s.
    fake_anthropic.enqueue(api.streamed(api.text(ANSWER), delta_chars=8, pace=lambda _: time.sleep(0.02)))
    started = time.monotonic()
    await serve(claude, draft_interval=0.25)
    fake.push_update(tg.text_update("tell me sixty words"))
    await fake.await_for(lambda f: len(f.sent) == 1)
    took = time.monotonic() - started

    assert len(fake.drafts) >= 2
    # Each draft is sent at least 0.25 s after the one before. They are timed as received, and on a busy
    # machine one can arrive late and so close to the next: any two gaps in a row still span an interval.
    arrived = [draft["at"] for draft in fake.drafts]
    assert all(later - earlier >= 0.25 * 0.8 for earlier, later in zip(arrived, arrived[2:], strict=False))
    assert len(fake.drafts) <= took / 0.25 + 1
    assert fake.sent_texts == [ANSWER]


async def test_a_429_on_drafts_neither_delays_nor_loses_the_reply(
    serve: Serve,
    fake: FakeTelegram,
    fake_anthropic: FakeAnthropic,
    claude: AnthropicModel,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="bot.channels.telegram.drafts")
    gate = Gate()
    fake_anthropic.enqueue(api.streamed(api.text(ANSWER), delta_chars=40, pace=gate))
    fake.fail_next("sendMessageDraft", 429, "Too Many Requests: retry after 30", retry_after=30)
    await serve(claude, draft_interval=0.01)
    fake.push_update(tg.text_update("tell me sixty words"))
    gate.allow(1)
    await fake.await_for(lambda f: len(f.calls("sendMessageDraft")) == 1)
    gate.allow(len(ANSWER))
    # Well within the 30 s Telegram asked drafts to wait: the reply does not wait with them.
    await fake.await_for(lambda f: len(f.sent) == 1, timeout=10)
    assert fake.sent_texts == [ANSWER]
    assert len(fake.calls("sendMessageDraft")) == 1 and fake.drafts == []  # drafts to this chat paused
    assert "drafts to chat 42 paused 30s" in caplog.text


async def test_a_long_answer_drafts_its_last_message_within_telegrams_limit(
    serve: Serve, fake: FakeTelegram, fake_anthropic: FakeAnthropic, claude: AnthropicModel
) -> None:
    paragraphs = "\n\n".join(f"Paragraph {i}: " + "lorem ipsum dolor " * 20 for i in range(20))  # ~7,600
    gate = Gate()
    fake_anthropic.enqueue(api.streamed(api.text(paragraphs), delta_chars=500, pace=gate))
    await serve(claude, draft_interval=0.01)
    fake.push_update(tg.text_update("write a lot"))
    deltas = -(-len(paragraphs) // 500)
    for written in range(1, deltas):  # each delta but the last, which ends the stream, is drafted
        gate.allow(written)
        await fake.await_for(lambda f, d=written: len(f.drafts) >= d)
    gate.allow(deltas)
    await fake.await_for(lambda f: len(f.sent) == 2)
    assert fake.sent_texts == [chunk.text for chunk in render(paragraphs)]
    assert all(tg.utf16_len(d["text"]) <= tg.MAX_MESSAGE_LENGTH for d in fake.drafts)
    # Past the first message's worth, the draft shows the second message as it grows.
    assert fake.drafts[-1]["text"] == fake.sent_texts[1][: len(fake.drafts[-1]["text"])]


async def test_group_chats_and_a_zero_interval_get_no_drafts_and_the_same_reply(
    serve: Serve, fake: FakeTelegram, fake_anthropic: FakeAnthropic, claude: AnthropicModel
) -> None:
    fake_anthropic.enqueue(api.streamed(api.text(ANSWER)), api.streamed(api.text(ANSWER)))
    await serve(claude, draft_interval=0, allow_groups=True)
    fake.push_update(tg.text_update("tell me sixty words"))
    await fake.await_for(lambda f: len(f.sent) == 1)
    assert fake.sent_texts == [ANSWER] and fake.calls("sendMessageDraft") == []


@SEVERAL_PROCESSES
def test_a_sigkill_mid_stream_then_a_restart_sends_the_answer_once(
    tmp_path: Path, fake: FakeTelegram, fake_anthropic: FakeAnthropic, vaultbot_run: RunVaultbot
) -> None:
    killed = threading.Event()
    requests: list[dict[str, Any]] = []
    drafted = 0  # drafts sent before the kill

    def answer(body: dict[str, Any]) -> api.Canned:
        requests.append(body)
        if len(requests) == 1:  # the first process dies three deltas into the answer
            return api.streamed(api.text(ANSWER), delta_chars=40, pace=lambda i: i < 3 or killed.wait(30))
        # The re-run holds at the same point until it too has shown a draft.
        return api.streamed(
            api.text(ANSWER), delta_chars=40, pace=lambda i: i != 3 or fake.wait_for(lambda f: len(f.drafts) > drafted)
        )

    fake_anthropic.handler = answer
    fake.push_update(tg.text_update("tell me sixty words"))
    first = start(vaultbot_run, fake, fake_anthropic, VAULTBOT_TELEGRAM__DRAFT_INTERVAL="0.01")
    wait_until(lambda: bool(fake.drafts) and fake.drafts[-1]["text"] == ANSWER[:120].rstrip(), "a draft", first)
    stop(first, signal.SIGKILL)
    drafted = len(fake.drafts)
    killed.set()

    second = start(vaultbot_run, fake, fake_anthropic, VAULTBOT_TELEGRAM__DRAFT_INTERVAL="0.01")
    wait_until(lambda: inbound_statuses(tmp_path) == ["done"] and len(fake.sent) >= 1, "the answer", second)
    errors = stop(second, signal.SIGTERM)
    assert second.returncode == 0, errors
    assert fake.sent_texts == [ANSWER]
    assert len(fake.drafts) > drafted  # the re-run streamed again…
    assert len({d["draft_id"] for d in fake.drafts}) == 1  # …into the same draft, which the answer replaced
    assert sends(fake)[-1] == "sendMessage"


@pytest.mark.parametrize(
    ("steps", "reply"),
    [
        ([api.tool_use(("send_message", {"text": "On it."}), preamble="Let me see."), api.text("")], "On it."),
        (
            [api.tool_use(("log_interaction", {"summary": "hi"}), preamble="Let me note that."), api.text("Done.")],
            "Done.",
        ),
    ],
    ids=["send_message", "final text"],
)
async def test_a_run_that_calls_tools_leaves_no_draft_behind(
    serve: Serve,
    fake: FakeTelegram,
    fake_anthropic: FakeAnthropic,
    claude: AnthropicModel,
    caplog: pytest.LogCaptureFixture,
    steps: list[api.Canned],
    reply: str,
) -> None:
    fake_anthropic.enqueue(*steps)
    served = await serve(claude, draft_interval=0.01)
    fake.push_update(tg.text_update("do something"))
    await fake.await_for(lambda f: f.sent_texts == [reply])
    await served.channel.stop()
    await asyncio.wait_for(served.task, 10)  # no draft task left waiting
    assert sends(fake)[-1] == "sendMessage"
    assert "still pending" not in caplog.text  # the reply never waited on a draft


async def test_text_written_after_send_message_is_never_drafted(
    serve: Serve, fake: FakeTelegram, fake_anthropic: FakeAnthropic, claude: AnthropicModel
) -> None:
    # The run answered with send_message; the final text it writes afterwards is never sent, so a draft of
    # it would show the user words that then vanish.
    after = "I have sent it to you, and here is more that nobody will receive."
    fake_anthropic.enqueue(
        api.tool_use(("send_message", {"text": "On it."})), api.streamed(api.text(after), delta_chars=8)
    )
    served = await serve(claude, draft_interval=0.01)
    fake.push_update(tg.text_update("send it"))
    await fake.await_for(lambda f: f.sent_texts == ["On it."])
    async with asyncio.timeout(10):  # until the run has written all of its final text and finished
        while await served.app.bus.counts(INBOUND) != {"done": 1}:
            with served.app.bus.listen(INBOUND) as changed:
                if await served.app.bus.counts(INBOUND) != {"done": 1}:
                    await changed.wait()
    assert len(fake_anthropic.requests) == 2
    assert not any("sent it to you" in d["text"] for d in fake.drafts)


async def test_a_file_refused_while_a_run_works_leaves_its_typing_on(
    serve: Serve, fake: FakeTelegram, fake_anthropic: FakeAnthropic, claude: AnthropicModel
) -> None:
    # The channel's own answers ("too big") are notices: sending one must not end the "typing…" of a run
    # that is still working in that chat.
    answer = api.Held(api.text("Done thinking."))
    fake_anthropic.handler = answer
    await serve(claude)
    fake.push_update(tg.text_update("think hard"))
    try:
        await asyncio.to_thread(answer.asked.wait, 10)
        fake.push_update(tg.document_update("big", "video.mov", "video/quicktime", 50 * 1024 * 1024))
        await fake.await_for(lambda f: any("too big" in t for t in f.sent_texts))
        mark = len(fake.requests)
        await fake.await_for(lambda f: sum(r.method == "sendChatAction" for r in f.requests[mark:]) >= 2)
    finally:
        answer.release()
    await fake.await_for(lambda f: "Done thinking." in f.sent_texts)


async def test_typing_goes_on_after_a_message_while_the_run_still_works(
    tmp_path: Path, serve: Serve, fake: FakeTelegram, fake_anthropic: FakeAnthropic, claude: AnthropicModel
) -> None:
    resumed: list[bool] = []

    def actions_since(mark: int) -> int:
        return sum(1 for r in fake.requests[mark:] if r.method == "sendChatAction")

    def answer(body: dict[str, Any]) -> api.Canned:
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if step == 0:
            return api.tool_use(("send_message", {"text": "On it."}))
        if step == 1:  # the run goes on with another tool once the message is out and acked
            deadline = time.monotonic() + 10
            while bus_statuses(tmp_path / "vaultbot.db", "outbound:telegram") != ["done"]:
                assert time.monotonic() < deadline, "the message was not sent"
                time.sleep(0.01)
            return api.tool_use(("log_interaction", {"summary": "did it"}))
        mark = len(fake.requests)  # "typing…" is still refreshed (twice: one could be a late one)
        try:
            fake.wait_for(lambda f: actions_since(mark) >= 2)
            resumed.append(True)
        except AssertionError:
            resumed.append(False)
        return api.text("")

    fake_anthropic.handler = answer
    served = await serve(claude, draft_interval=0.01)
    fake.push_update(tg.text_update("do something"))
    await fake.await_for(lambda f: bool(resumed), timeout=20)
    assert resumed == [True]
    await served.channel.stop()
    assert len(fake_anthropic.requests) == 3 and fake.sent_texts == ["On it."]
