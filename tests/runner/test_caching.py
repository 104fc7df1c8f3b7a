"""The conversation is cached as it grows: measured against the fake API's prompt-cache accounting
(the documented rules), through the real SDK and the real runner."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest

from bot.app import App
from bot.clock import stamped, unstamp
from bot.runner.history import fit
from bot.store import Turn
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.prompt_cache import count_tokens
from tests.helpers import run_inbox
from tests.runner.conftest import said, send

AppFactory = Callable[..., Awaitable[App]]


@pytest.fixture
def cached_api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic(prompt_cache=True) as fake:
        yield fake


async def open_app(make_app: AppFactory, fake: FakeAnthropic, **model: Any) -> App:
    return await make_app(
        anthropic_api_key="sk-ant-test",
        anthropic_base_url=fake.base_url,
        model={"name": "claude-test", "sdk_max_retries": 0, **model},
    )


def remember(body: dict[str, Any]) -> api.Canned:
    """A "remember …" turn in four model calls: vault_write, log_interaction, send_message, end."""
    messages = body["messages"]
    start = max(i for i, m in enumerate(messages) if m["role"] == "user" and "tool_result" not in json.dumps(m))
    text, step = said(messages[start]), len(messages) - 1 - start
    if step == 0:
        return api.tool_use(("vault_write", {"folder": "Inbox", "title": text[-40:], "content": text * 3}))
    if step == 2:
        return api.tool_use(("log_interaction", {"summary": f"Saved: {text}", "category": "note"}))
    if step == 4:
        return api.tool_use(("send_message", {"text": "Saved it."}))
    return api.text("Done.")


def totals(fake: FakeAnthropic) -> list[int]:
    return [u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"] for u in fake.usages]


async def test_every_call_reads_everything_the_call_before_it_sent(
    make_app: AppFactory, cached_api: FakeAnthropic
) -> None:
    app = await open_app(make_app, cached_api)
    cached_api.handler = remember
    texts = [f"remember that the spare key number {i} is under the blue flower pot by the door" for i in range(10)]
    read_as = []  # what the model reads: each message stamped with its time
    for text in texts:
        message = await send(app, text)
        read_as.append(stamped(text, message.received_at, app.clock.tz))
        await run_inbox(app)
    assert len(cached_api.usages) == 40
    sent, read = totals(cached_api), [u["cache_read_input_tokens"] for u in cached_api.usages]
    # Within a run and from one turn to the next, the whole previous prompt is read from the cache,
    # except the user's new message, which the first call sends as it came (unmarked).
    message = [count_tokens("user:" + json.dumps({"type": "text", "text": t}, ensure_ascii=False)) for t in read_as]
    unread = [sent[i - 1] - read[i] for i in range(1, 40)]
    assert unread == [message[i // 4] if i % 4 == 1 else 0 for i in range(1, 40)]
    assert sum(read) / sum(sent) >= 0.9
    last = cached_api.usages[-1]
    assert last["input_tokens"] + last["cache_creation_input_tokens"] < 1500
    stored = await app.db.fetchall("SELECT messages FROM turns")
    assert len(stored) == 10 and not any("cache_control" in row["messages"] for row in stored)


async def test_a_step_with_many_tool_calls_still_reads_the_previous_call(
    make_app: AppFactory, cached_api: FakeAnthropic
) -> None:
    app = await open_app(make_app, cached_api)
    calls = [("vault_list", {"folder": "", "limit": n}) for n in range(1, 13)]  # 24 blocks: beyond the lookback
    cached_api.enqueue(
        api.tool_use(("vault_search", {"query": "keys"})), api.tool_use(*calls), api.text("Nothing there yet.")
    )
    await send(app, "what do I have?")
    await run_inbox(app)
    assert cached_api.usages[2]["cache_read_input_tokens"] == totals(cached_api)[1]


async def test_the_history_window_start_holds_across_messages_so_most_turns_still_hit(
    make_app: AppFactory, cached_api: FakeAnthropic
) -> None:
    app = await open_app(make_app, cached_api, history_turns=10)
    cached_api.handler = lambda body: api.text("Noted.")
    for i in range(30):
        await send(app, f"note {i}")
        await run_inbox(app)
    starts = [int(unstamp(said(r.body["messages"][0])).split()[1]) for r in cached_api.requests]
    read = [u["cache_read_input_tokens"] for u in cached_api.usages]
    static = cached_api.usages[0]["cache_creation_input_tokens"]  # tools and system
    misses = [i for i in range(1, 30) if read[i] == static]  # nothing of the conversation read
    # A window sliding turn by turn would start elsewhere, and miss, on each of the last 20 messages.
    assert len(misses) <= 10
    assert misses == [1] + [i for i in range(2, 30) if starts[i] != starts[i - 1]]
    assert starts == sorted(starts) and all(i - start >= 5 for i, start in enumerate(starts) if i >= 10)


async def test_a_turn_compacted_in_history_is_still_read_up_to_its_message(
    make_app: AppFactory, cached_api: FakeAnthropic
) -> None:
    app = await open_app(make_app, cached_api)
    (app.notes.root / "Long.md").write_text("a long note " * 400)
    cached_api.enqueue(api.tool_use(("vault_read", {"path": "Long"})), api.text("It is long."), api.text("Hi."))
    await send(app, "what is in Long?")
    await run_inbox(app)
    await send(app, "hello")
    await run_inbox(app)
    [first, _, next_turn] = cached_api.usages
    stored = json.dumps(cached_api.requests[2].body["messages"])
    assert "characters compacted from history" in stored  # the long result was cut when stored
    assert next_turn["cache_read_input_tokens"] == totals(cached_api)[0]  # read up to "what is in Long?"
    assert first["cache_creation_input_tokens"] > 0


def test_the_window_start_holds_for_several_messages_and_keeps_half_the_window() -> None:
    def turn(n: int) -> Turn:
        messages = [
            {"role": "user", "content": f"question {n}"},
            {"role": "assistant", "content": [{"type": "text", "text": f"answer {n}"}]},
        ]
        return Turn(messages, tokens=10, id=n)

    def first_kept(last: int, budget: int = 10_000) -> int:
        loaded = [turn(n) for n in range(max(1, last - 19), last + 1)]  # what the store returns
        return int(said(fit(loaded, budget, window=20)[0]).split()[1])

    starts = [first_kept(last) for last in range(1, 301)]
    assert starts[:19] == [1] * 19  # nothing dropped until the window is full
    assert starts == sorted(starts) and all(last - start >= 9 for last, start in enumerate(starts, 1) if last >= 20)
    changes = sum(1 for a, b in zip(starts, starts[1:], strict=False) if a != b)
    assert changes <= 300 // 4  # turn by turn, it would be 280
    # A budget for fewer turns than half the window: the newest turns that fit, as before.
    assert first_kept(300, budget=45) == 297
