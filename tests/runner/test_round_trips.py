"""The usual turn takes two model calls: the tools together in one response, then the reply as
final text. Through the real SDK against the fake Messages API."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from bot.app import App
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import outbox, run_inbox
from tests.runner.conftest import send

AppFactory = Callable[..., Awaitable[App]]


async def test_tools_called_together_run_in_order_with_one_result_each(app: App, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(
        api.tool_use(
            ("vault_write", {"folder": "Inbox", "title": "Oat milk", "content": "buy oat milk"}),
            ("vault_read", {"path": "Inbox/Oat milk"}),  # sees the note written just before it
            ("log_interaction", {"summary": "Saved oat milk", "category": "note"}),
        ),
        api.text("Saved to Inbox/Oat milk.md."),
    )
    await send(app, "remember oat milk")
    await run_inbox(app)

    assert len(fake_anthropic.requests) == 2  # one call for the tools, one for the reply
    asked = [b["id"] for b in fake_anthropic.requests[1].body["messages"][-2]["content"] if b["type"] == "tool_use"]
    results = [b for b in fake_anthropic.requests[1].body["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert [r["tool_use_id"] for r in results] == asked and len(asked) == 3
    assert "buy oat milk" in results[1]["content"]
    [run] = await app.store.list_runs()
    assert run["tools_called"] == ["vault_write", "vault_read", "log_interaction"]
    assert [m.text for m in await outbox(app)] == ["Saved to Inbox/Oat milk.md."]


async def test_a_final_text_reply_is_sent_once_even_when_the_last_call_is_retried(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    write = ("vault_write", {"folder": "Inbox", "title": "Oat milk", "content": "buy oat milk"})
    log = ("log_interaction", {"summary": "Saved oat milk", "category": "note"})
    fake_anthropic.enqueue(
        api.tool_use(write, log),
        api.status(529, "overloaded_error"),  # the reply's call fails; the message is retried
        api.tool_use(write, log),
        api.text("Saved to Inbox/Oat milk.md."),
    )
    await send(app, "remember oat milk")
    await run_inbox(app)
    replies = [m.text for m in await outbox(app) if m.kind == "reply"]
    assert replies == ["Saved to Inbox/Oat milk.md."]


async def test_after_send_message_the_final_text_is_not_sent_again(app: App, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(
        api.tool_use(("send_message", {"text": "Looking through your notes…"})),
        api.text("Found nothing about milk."),
    )
    await send(app, "anything about milk?")
    await run_inbox(app)
    assert [m.text for m in await outbox(app)] == ["Looking through your notes…"]


async def test_the_prompt_and_tools_ask_for_tools_together_and_the_reply_as_final_text(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(api.text("Hi."))
    await send(app, "hi")
    await run_inbox(app)
    body = fake_anthropic.requests[0].body
    system = body["system"][0]["text"]
    assert "Call independent tools together, in one response" in system
    assert "your final text is your reply" in system
    described = {t["name"]: t["description"] for t in body["tools"]}
    assert "final text" in described["send_message"] and "same response" in described["log_interaction"]


@pytest.mark.parametrize(
    ("write", "why"),
    [
        ({"folder": "../../etc", "title": "Oat milk", "content": "buy oat milk"}, "path_not_allowed"),
        ({"folder": "Inbox", "title": "  ", "content": "buy oat milk"}, "invalid_input"),
    ],
)
async def test_a_failed_write_is_never_logged_or_told_as_saved_by_the_calls_sent_with_it(
    app: App, fake_anthropic: FakeAnthropic, write: dict[str, str], why: str
) -> None:
    # The model asks for the write, the log entry and the message together, before it can know
    # whether the write worked: told after a failed write, they would claim what did not happen.
    fake_anthropic.enqueue(
        api.tool_use(
            ("vault_write", write),
            ("log_interaction", {"summary": "Saved oat milk", "category": "note"}),
            ("send_message", {"text": "Saved oat milk."}),
        ),
        api.tool_use(("log_interaction", {"summary": "Could not save oat milk", "category": "error"})),
        api.text("I could not save that note."),
    )
    await send(app, "remember oat milk")
    await run_inbox(app)

    assert [m.text for m in await outbox(app)] == ["I could not save that note."]
    assert [e["summary"] for e in await app.store.list_interactions()] == ["Could not save oat milk"]
    results = [b for b in fake_anthropic.requests[1].body["messages"][-1]["content"] if b["type"] == "tool_result"]
    assert [r.get("is_error", False) for r in results] == [True, True, True]
    assert why in results[0]["content"]
    for held in results[1:]:
        assert "Not run" in held["content"] and "vault_write failed" in held["content"]
    [run] = await app.store.list_runs()
    assert run["tools_called"] == ["vault_write", "log_interaction"]  # the second response's entry


async def test_a_message_sent_with_a_write_that_worked_is_sent(app: App, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(
        api.tool_use(
            ("vault_write", {"folder": "Inbox", "title": "Oat milk", "content": "buy oat milk"}),
            ("log_interaction", {"summary": "Saved oat milk", "category": "note"}),
            ("send_message", {"text": "Saved oat milk."}),
        ),
        api.text(""),
    )
    await send(app, "remember oat milk")
    await run_inbox(app)
    assert [m.text for m in await outbox(app)] == ["Saved oat milk."]
    assert [e["summary"] for e in await app.store.list_interactions()] == ["Saved oat milk"]
