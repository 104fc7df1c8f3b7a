"""Reviewing what it did: a run's trail keeps each model call's new message, answer and tokens, and
each tool call's input and result, as `vaultbot runs show` and the review page show them.

Through the real app, the real ``anthropic`` SDK and the fake Messages API.
"""

from __future__ import annotations

from bot.app import App
from bot.clock import unstamp
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import run_inbox
from tests.runner.conftest import send

WRITE = {"folder": "Inbox", "title": "Milk", "content": "oat milk"}
USAGE = {"input_tokens": 120, "output_tokens": 7, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


async def test_the_trail_keeps_what_the_model_was_sent_and_said_and_what_each_tool_got_and_gave(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(api.tool_use(("vault_write", WRITE)), api.text("Filed.", usage=USAGE))
    await send(app, "remember oat milk")
    await run_inbox(app)

    [run] = await app.store.list_runs()
    detail = await app.store.get_run(run["id"])
    assert detail is not None
    first, tool, last = detail["steps"]
    assert (first["kind"], tool["kind"], last["kind"]) == ("model", "tool", "model")
    assert first["name"] == "claude-fake"  # the model that answered, as the API names it
    assert not first["is_error"] and not last["is_error"]
    assert first["input"]["messages"] == 1 and first["input"]["last"]["role"] == "user"
    assert unstamp(first["input"]["last"]["content"]) == "remember oat milk"
    assert first["output"]["stop_reason"] == "tool_use"
    assert [b["input"] for b in first["output"]["content"] if b["type"] == "tool_use"] == [WRITE]
    assert (tool["name"], tool["input"], tool["is_error"]) == ("vault_write", WRITE, False)
    assert tool["output"]["success"] is True and tool["output"]["path"] == "Inbox/Milk.md"
    assert last["input"]["messages"] == 3 and last["input"]["last"]["content"][0]["type"] == "tool_result"
    assert last["output"] == {"stop_reason": "end_turn", "content": [{"type": "text", "text": "Filed."}]}
    assert last["usage"] == USAGE
