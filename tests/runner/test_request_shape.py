"""Every request the loop sends is one the real Messages API accepts: the blocks' keys spelt as the
API spells them, roles alternating, each tool_use answered by a tool_result carrying its id.

The fake server accepts any JSON, so a misspelt key ("tool_use_id" → "tool_useid") would pass every
other test while the real API answers 400 to every message. Asserted on the bodies the real
``anthropic`` SDK sent to the fake Messages API.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bot.app import App
from bot.clock import unstamp
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import outbox, run_inbox
from tests.runner.conftest import send

REQUEST_KEYS = {"model", "max_tokens", "system", "messages", "tools", "stream", "metadata", "temperature"}
# Each block type: the keys it must have, and the ones it may have.
BLOCKS = {
    "text": ({"type", "text"}, {"cache_control"}),
    "tool_use": ({"type", "id", "name", "input"}, {"cache_control"}),
    "tool_result": ({"type", "tool_use_id", "content"}, {"is_error", "cache_control"}),
}
TOOL_KEYS = {"name", "description", "input_schema"}
EPHEMERAL = {"type": "ephemeral"}


def user_said(message: dict[str, Any]) -> str:
    """A user message sent as the plain string it arrived as, without vaultbot's time stamp."""
    assert message["role"] == "user" and isinstance(message["content"], str), message
    return unstamp(message["content"])


def assert_block(block: dict[str, Any], allowed: set[str]) -> None:
    assert block.get("type") in allowed, block
    required, optional = BLOCKS[block["type"]]
    assert required <= set(block) <= required | optional, block
    assert block.get("cache_control", EPHEMERAL) == EPHEMERAL, block
    if block["type"] == "text":
        assert isinstance(block["text"], str) and block["text"].strip(), block
    elif block["type"] == "tool_use":
        assert isinstance(block["id"], str) and isinstance(block["name"], str) and isinstance(block["input"], dict)
    else:
        assert isinstance(block["tool_use_id"], str) and isinstance(block["content"], str) and block["content"]
        assert block.get("is_error", True) is True, block


def assert_accepted_by_the_api(body: dict[str, Any]) -> None:
    """What the Messages API checks before it answers (a 400 otherwise)."""
    assert {"model", "max_tokens", "messages"} <= set(body) <= REQUEST_KEYS, sorted(body)
    for block in body["system"]:
        assert_block(block, {"text"})
    for tool in body["tools"]:
        assert (
            {"name", "description", "input_schema"}
            <= set(tool)
            <= {"name", "description", "input_schema", "cache_control"}
        )
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"] * (len(messages) // 2) + ["user"]
    asked: list[str] = []
    for message in messages:
        assert set(message) == {"role", "content"}, message
        content = message["content"]
        if isinstance(content, str):
            assert content.strip() and message["role"] == "user"
            blocks: list[dict[str, Any]] = []
        else:
            blocks = content
            assert blocks, message
        allowed = {"text", "tool_result"} if message["role"] == "user" else {"text", "tool_use"}
        for block in blocks:
            assert_block(block, allowed)
        answered = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        if message["role"] == "user":
            # Every call of the assistant message before is answered, in order, results first.
            assert answered == asked, message
            assert [b["type"] for b in blocks[: len(answered)]] == ["tool_result"] * len(answered)
        asked = [b["id"] for b in blocks if b["type"] == "tool_use"]
    assert asked == []


async def test_every_request_of_runs_with_tools_hints_and_a_guard_stop_is_well_formed(
    on_claude: Callable[..., Awaitable[App]], fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    prompt = tmp_path / "system_prompt.md"
    prompt.write_text("You are Ann's assistant. Be brief.", encoding="utf-8")
    app = await on_claude(system_prompt=str(prompt))
    fake_anthropic.enqueue(
        # One response, three calls: a success, a "replan" failure and a permanent one (each failure adds a hint).
        api.tool_use(
            ("vault_write", {"folder": "Inbox", "title": "Milk", "content": "oat milk"}),
            ("vault_read", {"path": "Inbox/Missing"}),
            ("vault_read", {"path": "../outside"}),
            preamble="Filing it.",
        ),
        api.text("Filed under Inbox/Milk."),
        # The next message: the same call three times in one response; the third is stopped by the guard.
        api.tool_use(*[("vault_search", {"query": "milk"})] * 3),
    )
    await send(app, "remember oat milk")
    await run_inbox(app)
    await send(app, "what did I say about milk?")
    await run_inbox(app)
    fake_anthropic.handler = lambda body: api.text("Yes.")
    await send(app, "still there?")
    await run_inbox(app)

    bodies = [r.body for r in fake_anthropic.requests]
    assert len(bodies) == 4
    for body in bodies:
        assert_accepted_by_the_api(body)

    first, second, third, last = bodies
    assert first["system"][0]["text"] == "You are Ann's assistant. Be brief."
    assert user_said(first["messages"][-1]) == "remember oat milk"
    # The calls' results went back in one user message, each naming its call, then the hints.
    calls = [b for b in second["messages"][-2]["content"] if b["type"] == "tool_use"]
    answer = second["messages"][-1]["content"]
    results = [b for b in answer if b["type"] == "tool_result"]
    assert [r["tool_use_id"] for r in results] == [c["id"] for c in calls]
    assert [r.get("is_error", False) for r in results] == [False, True, True]
    assert '"success": true' in results[0]["content"] and "Inbox/Milk.md" in results[0]["content"]
    hints = [b["text"] for b in answer if b["type"] == "text"]
    assert any("try a different approach" in h for h in hints) and any("is permanent" in h for h in hints)
    assert user_said(third["messages"][-1]) == "what did I say about milk?"
    # The stopped run's turn reaches the next request closed: the stopped call answered, saying why it was not run.
    stopped = last["messages"][-3]["content"]
    assert [b["type"] for b in stopped] == ["tool_result"] * 3
    assert [b.get("is_error", False) for b in stopped] == [False, False, True]
    assert "Not run: vault_search was called with the same input 3 times" in stopped[2]["content"]
    assert user_said(last["messages"][-1]) == "still there?"
    # And the user heard each answer once, and of the stopped run only why it stopped.
    assert [m.text for m in await outbox(app)] == [
        "Filed under Inbox/Milk.",
        "I stopped here: vault_search was called with the same input 3 times within 10 calls.",
        "Yes.",
    ]


async def test_a_run_that_ended_on_an_empty_reply_reads_as_done_in_the_next_request(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    # The usual end of a run that answered through send_message: an empty final text.
    fake_anthropic.enqueue(api.tool_use(("send_message", {"text": "Noted."})), api.text(""), api.text("Yes."))
    await send(app, "note this")
    await run_inbox(app)
    await send(app, "done?")
    await run_inbox(app)

    last = fake_anthropic.requests[-1].body
    assert_accepted_by_the_api(last)
    # Not "(Run stopped: …)" or "(This turn ended without a reply.)": the model would take it as unfinished work.
    ended = last["messages"][-2]
    assert ended["role"] == "assistant" and [b["text"] for b in ended["content"]] == ["(Done.)"]
    assert [m.text for m in await outbox(app)] == ["Noted.", "Yes."]
