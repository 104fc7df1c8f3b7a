"""The usual turn takes two model calls: the tools together in one response, then the reply as
final text. Through the real SDK against the fake Messages API."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

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
