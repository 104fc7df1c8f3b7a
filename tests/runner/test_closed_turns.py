"""However a run ends, the next message's request is a well-formed conversation: roles alternate,
every tool_use is answered, and the earlier turn ends on an assistant message saying how it ended.

Asserted on the request bodies the fake Messages API received from the real SDK.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.app import App
from bot.clock import unstamp
from bot.runner.closing import closed
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import run_inbox
from tests.runner.conftest import said, send

AppFactory = Callable[..., Awaitable[App]]


@pytest.fixture
async def app(on_claude: Callable[..., Awaitable[App]]) -> App:
    return await on_claude(max_tool_calls=8)


def assert_well_formed(messages: list[dict[str, Any]]) -> None:
    """What the Messages API requires of a conversation, and what keeps turns apart."""
    assert [m["role"] for m in messages] == ["user", "assistant"] * (len(messages) // 2) + ["user"]
    for i, message in enumerate(messages):
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        assert blocks and all(b["type"] != "text" or b["text"].strip() for b in blocks), message
        asked = [b["id"] for b in blocks if b["type"] == "tool_use"]
        if asked:
            answer = messages[i + 1]["content"]
            results = [b["tool_use_id"] for b in answer if b["type"] == "tool_result"]
            assert results == asked  # every call answered, in order, results first
            assert [b["type"] for b in answer[: len(results)]] == ["tool_result"] * len(results)


async def next_request_after(app: App, fake: FakeAnthropic) -> list[dict[str, Any]]:
    """Send "still alive?" once the run before has ended; the messages its first request carried."""
    fake.handler = lambda body: api.text("Yes, still here.")
    before = len(fake.requests)
    await send(app, "still alive?")
    await run_inbox(app)
    messages = fake.requests[before].body["messages"]
    assert unstamp(said(messages[-1])) == "still alive?"
    assert_well_formed(messages)
    return messages


def tool_calls(make: Callable[[int], list[tuple[str, dict[str, Any]]]]) -> Callable[[dict[str, Any]], api.Canned]:
    counter = itertools.count()
    return lambda body: api.tool_use(*make(next(counter)))


@pytest.mark.parametrize(
    ("calls", "ending"),
    [
        # The same call over and over: the repetition guard.
        (lambda n: [("vault_search", {"query": "milk"})], "(Run stopped: vault_search was called with the same"),
        # Always a new call: the cap of eight tool calls.
        (lambda n: [("vault_list", {"folder": "", "limit": n + 1})], "(Run stopped: the run reached its limit of 8"),
        # Two tools failing with permanent errors: the run escalates.
        (
            lambda n: [("vault_read", {"path": f"../x{n}"}), ("no_such_tool", {"n": n})],
            "(Run stopped: 2 different tools kept failing.)",
        ),
    ],
    ids=["repetition", "cap", "escalation"],
)
async def test_a_run_stopped_by_a_guard_is_closed_before_the_next_message(
    app: App, fake_anthropic: FakeAnthropic, calls: Callable[[int], list[Any]], ending: str
) -> None:
    fake_anthropic.handler = tool_calls(calls)
    await send(app, "find milk")
    await run_inbox(app)
    [run] = await app.store.list_runs()
    assert run["status"] in ("stopped", "escalated")

    messages = await next_request_after(app, fake_anthropic)
    assert unstamp(said(messages[0])) == "find milk"
    assert said(messages[-2]).startswith(ending)


async def test_a_reply_cut_off_in_a_tool_call_is_closed(app: App, fake_anthropic: FakeAnthropic) -> None:
    cut = {"type": "tool_use", "id": "toolu_cut", "name": "vault_write", "input": {"folder": "Inbox"}}
    fake_anthropic.enqueue(api.message([{"type": "text", "text": "Saving that."}, cut], "max_tokens"))
    await send(app, "remember a very long thing")
    await run_inbox(app)
    messages = await next_request_after(app, fake_anthropic)
    assert messages[2]["content"][0]["content"] == "Not run: the run ended before this call."
    assert said(messages[3]) == "(Run stopped: the reply reached the output token limit.)"


async def test_a_model_that_fails_mid_run_and_recovers_leaves_one_closed_turn(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(
        api.tool_use(("vault_write", {"folder": "Inbox", "title": "Oat milk", "content": "buy"})),
        api.status(529, "overloaded_error"),  # the run fails after its first tool call
        api.tool_use(("vault_write", {"folder": "Inbox", "title": "Oat milk", "content": "buy", "mode": "append"})),
        api.status(500),
        api.tool_use(("log_interaction", {"summary": "Saved oat milk", "category": "note"})),
        api.text("Saved it."),
    )
    await send(app, "remember oat milk")
    await run_inbox(app)
    statuses = sorted(r["status"] for r in await app.store.list_runs())
    assert statuses == ["completed", "failed", "failed"]
    # Each retry starts again from the message alone, not from the failed attempt's steps.
    retries = [r.body["messages"] for r in fake_anthropic.requests if len(r.body["messages"]) == 1]
    assert [unstamp(said(m[0])) for m in retries] == ["remember oat milk"] * 3

    messages = await next_request_after(app, fake_anthropic)
    assert [unstamp(said(m)) for m in messages if m["role"] == "user" and said(m)] == [
        "remember oat milk",
        "still alive?",
    ]
    assert said(messages[-2]) == "Saved it."


@pytest.mark.parametrize("failure", [api.status(500), api.status(400, "invalid_request_error")])
async def test_a_dead_lettered_message_leaves_a_closed_turn(
    app: App, fake_anthropic: FakeAnthropic, failure: api.Canned
) -> None:
    fake_anthropic.enqueue(api.tool_use(("vault_list", {"folder": ""})))
    fake_anthropic.handler = lambda body: failure
    await send(app, "list my notes")
    await run_inbox(app)
    assert await app.bus.dead_letters("inbound")

    messages = await next_request_after(app, fake_anthropic)
    assert unstamp(said(messages[0])) == "list my notes"
    assert said(messages[1]).startswith("(Not answered: ")
    assert "sk-ant" not in said(messages[1])


async def test_a_turn_stored_open_by_an_older_version_is_closed_on_load(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    stopped = [
        {"role": "user", "content": "find milk"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "vault_search", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "{}"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "vault_search", "input": {}}]},
    ]
    await app.store.append_turn("terminal:ann", "old-1", stopped)
    messages = await next_request_after(app, fake_anthropic)
    assert messages[4]["content"][0]["is_error"] is True  # t2 answered as not run
    assert said(messages[5]) == "(This turn ended without a reply.)"


def test_a_closed_turn_is_left_exactly_as_it_is() -> None:
    turn = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "vault_list", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "{}"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Nothing there."}]},
    ]
    assert closed(turn) == turn
    assert closed(closed(turn[:2], "(Run stopped: x.)")) == closed(turn[:2], "(Run stopped: x.)")


def test_an_empty_final_reply_becomes_a_note_the_api_accepts() -> None:
    turn = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "send_message", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "{}"}]},
        {"role": "assistant", "content": []},
    ]
    assert closed(turn, "(Done.)")[-1] == {"role": "assistant", "content": [{"type": "text", "text": "(Done.)"}]}
