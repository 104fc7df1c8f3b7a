"""Whole turns: an inbound message on the bus → the runner worker → replies, history, audit trail.

The model is the real ``anthropic`` SDK talking HTTP to a fake Messages API on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from bot.clock import unstamp
from bot.runner.handler import UNREACHABLE
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import outbox, run_inbox
from tests.runner.conftest import send

AppFactory = Callable[..., Awaitable[App]]


async def test_a_message_runs_the_tool_loop_files_a_note_and_replies(app: App, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(
        api.tool_use(
            (
                "vault_write",
                {"folder": "Tasks", "title": "Buy oat milk", "content": "- [ ] oat milk", "tags": ["shopping"]},
            ),
            ("log_interaction", {"summary": "Filed a shopping task", "category": "task"}),
        ),
        api.tool_use(("send_message", {"text": "Filed under Tasks/Buy oat milk.md", "chat_id": 42})),
        api.text(
            "Done.",
            usage={
                "input_tokens": 7,
                "output_tokens": 2,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 900,
            },
        ),
    )
    await send(app, "remember to buy oat milk")
    await run_inbox(app)

    note = (app.notes.root / "Tasks" / "Buy oat milk.md").read_text()
    assert "title: Buy oat milk" in note and "- shopping" in note and "- [ ] oat milk" in note
    # send_message was called, so the final text is not sent again.
    assert [(m.text, m.recipient) for m in await outbox(app)] == [("Filed under Tasks/Buy oat milk.md", "ann")]
    [entry] = await app.store.list_interactions()
    assert entry["summary"] == "Filed a shopping task" and entry["category"] == "task"
    [run] = await app.store.list_runs()
    assert run["status"] == "completed" and entry["run_id"] == run["id"]
    assert run["tools_called"] == ["vault_write", "log_interaction", "send_message"]
    assert run["usage"]["cache_read_input_tokens"] == 900
    detail = await app.store.get_run(run["id"])
    assert detail is not None
    assert [s["kind"] for s in detail["steps"]] == ["model", "tool", "tool", "model", "tool", "model"]

    first = fake_anthropic.requests[0]
    assert first.headers["authorization"] == "Bearer sk-ant-test-secret" or first.headers.get("x-api-key")
    assert first.body["model"] == "claude-test"
    assert first.body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert first.body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    # The tool results of both calls went back to the model in one user message.
    results = fake_anthropic.requests[1].body["messages"][-1]["content"]
    assert [json.loads(r["content"])["success"] for r in results] == [True, True]


async def test_a_run_that_never_calls_send_message_still_answers_with_its_text(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.enqueue(api.text("Oat milk is on your list."))
    await send(app, "what's on my list?")
    await run_inbox(app)
    assert [m.text for m in await outbox(app)] == ["Oat milk is on your list."]


async def test_history_carries_earlier_turns_of_the_same_conversation_only(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.handler = lambda body: api.text(f"answer to {unstamp(body['messages'][-1]['content'])}")
    await send(app, "first question")
    await send(app, "elsewhere", conversation="terminal:bob")
    await run_inbox(app)
    await send(app, "second question")
    await run_inbox(app)
    last = fake_anthropic.requests[-1].body["messages"]
    texts = [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in last]
    assert [unstamp(t) for t in texts] == ["first question", "answer to first question", "second question"]


async def test_a_500_then_success_is_answered_once(app: App, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(api.status(500), api.text("Here you go."))
    await send(app, "hello")
    await run_inbox(app)
    replies = [m for m in await outbox(app) if m.kind == "reply"]
    assert [m.text for m in replies] == ["Here you go."]
    assert [r["status"] for r in await app.store.list_runs()] == ["completed", "failed"]


@pytest.mark.parametrize(
    ("stream", "reason"),
    [
        pytest.param({"cut_after": 2}, "the model API's answer stopped before its end", id="cut-off"),
        pytest.param({"error_after": 2}, "the model API failed mid-answer (overloaded_error)", id="error-event"),
    ],
)
async def test_an_answer_broken_off_mid_stream_is_retried_never_sent_in_part(
    app: App, fake_anthropic: FakeAnthropic, stream: dict[str, int], reason: str
) -> None:
    answer = "A long answer that the model writes in several pieces, one after another."
    fake_anthropic.enqueue(api.streamed(api.text(answer), delta_chars=10, **stream), api.text(answer))
    await send(app, "hello")
    await run_inbox(app)
    replies = [m.text for m in await outbox(app) if m.kind == "reply"]
    assert replies == [answer]
    runs = await app.store.list_runs()
    assert [r["status"] for r in runs] == ["completed", "failed"]
    assert reason in runs[1]["reason"]


@pytest.mark.parametrize("failure", [api.status(500), api.status(529, "overloaded_error"), api.garbage()])
async def test_a_model_that_never_answers_is_told_once_dead_lettered_and_logged(
    app: App, fake_anthropic: FakeAnthropic, failure: api.Canned
) -> None:
    fake_anthropic.handler = lambda body: failure
    message = await send(app, "hello?")
    await run_inbox(app)

    texts = [m.text for m in await outbox(app)]
    assert texts.count(UNREACHABLE) == 1
    assert len(texts) == 2 and "Sorry, I could not handle your message after 3 attempts" in texts[1]
    [dead] = await app.bus.dead_letters(INBOUND)
    assert InboundMessage.model_validate_json(dead["payload"]).id == message.id  # nothing lost
    [entry] = await app.store.list_interactions()
    assert entry["category"] == "error" and "3 attempt" in entry["summary"]
    statuses = [r["status"] for r in await app.store.list_runs()]
    # Three attempts failed; the fourth run filed the dead letter.
    assert statuses == ["dead_lettered", "failed", "failed", "failed"]


async def test_a_refused_key_is_not_retried_and_the_user_is_told_what_to_fix(
    app: App, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.handler = lambda body: api.status(401, "authentication_error")
    await send(app, "hello?")
    await run_inbox(app)
    assert len(fake_anthropic.requests) == 1
    [notice] = await outbox(app)
    assert "ANTHROPIC_API_KEY" in notice.text and "sk-ant-test-secret" not in notice.text
    assert await app.bus.counts(INBOUND) == {"dead": 1}
    filing, run = await app.store.list_runs()
    assert run["status"] == "failed" and "key was refused" in run["reason"]
    assert filing["status"] == "dead_lettered" and filing["mode"] == "capture"


async def test_the_api_key_never_reaches_the_audit_trail(app: App, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(api.status(500), api.text("ok"))
    await send(app, "hi")
    await run_inbox(app)
    rows = [*await app.db.fetchall("SELECT * FROM runs"), *await app.db.fetchall("SELECT * FROM steps")]
    dump = json.dumps([dict(r) for r in rows], default=str)
    assert "sk-ant-test-secret" not in dump


@pytest.mark.parametrize("summariser_works", [True, False])
async def test_long_steps_are_summarised_for_the_audit_trail_and_a_failure_changes_nothing(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, summariser_works: bool
) -> None:
    app = await make_app(
        anthropic_api_key="sk-ant-test-secret",
        anthropic_base_url=fake_anthropic.base_url,
        model={"name": "claude-test", "summary_model": "claude-small", "sdk_max_retries": 0},
    )
    (app.notes.root / "Long.md").write_text("word " * 3000)
    script = iter([api.tool_use(("vault_read", {"path": "Long"})), api.text("It is a long note.")])

    def answer(body: dict[str, Any]) -> api.Canned:
        if body["model"] == "claude-small":
            return api.text("A note repeating one word.") if summariser_works else api.status(500)
        return next(script)

    fake_anthropic.handler = answer
    await send(app, "what is in Long?")
    await run_inbox(app)
    [run] = await app.store.list_runs()
    assert run["status"] == "completed"
    detail = await app.store.get_run(run["id"])
    assert detail is not None
    [read] = [s for s in detail["steps"] if s["name"] == "vault_read"]
    assert read["output"]["content"].count("word") == 3000  # the raw content is kept
    assert read["summary"] == ("A note repeating one word." if summariser_works else None)
    assert [m.text for m in await outbox(app)] == ["It is a long note."]


async def test_a_rate_limit_is_retried_after_the_time_the_api_asks_for(app: App, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.enqueue(api.status(429, "rate_limit_error", {"retry-after": "0.3"}), api.text("Back again."))
    await send(app, "hello")
    await run_inbox(app)
    assert [m.text for m in await outbox(app) if m.kind == "reply"] == ["Back again."]
    [failed] = [r for r in await app.store.list_runs() if r["status"] == "failed"]
    detail = await app.store.get_run(failed["id"])
    assert detail is not None
    [retrying] = [s for s in detail["steps"] if s["name"] == "run.retrying"]
    assert retrying["output"]["retry_after"] == 0.3


@pytest.mark.parametrize(("code", "error_type"), [(529, "overloaded_error"), (429, "rate_limit_error")])
async def test_the_message_waits_on_the_bus_as_long_as_retry_after_says(
    app: App, fake_anthropic: FakeAnthropic, code: int, error_type: str
) -> None:
    fake_anthropic.enqueue(api.status(code, error_type, {"retry-after": "30"}))
    message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="hi")
    published = await app.bus.publish(INBOUND, message, conversation="terminal:ann")
    worker = app.runner_worker()
    working = asyncio.create_task(worker.run())
    query = "SELECT status, attempts, available_at FROM bus_messages WHERE id = ?"
    try:
        async with asyncio.timeout(30):
            while True:  # until the first attempt has handed the message back to the bus
                row = await app.db.fetchone(query, (published.id,))
                if row is not None and row["attempts"] >= 1 and row["status"] == "pending":
                    break
                await app.bus.wait(INBOUND, timeout=0.05)
        # Backoff alone would bring it back within 0.05 s (the test settings); the API asked for 30.
        assert row["attempts"] == 1 and 25 < row["available_at"] - time.time() <= 30
    finally:
        await worker.stop(grace=5)
        await working
    assert len(fake_anthropic.requests) == 1
    [run] = await app.store.list_runs()
    assert run["status"] == "failed"
    detail = await app.store.get_run(run["id"])
    assert detail is not None
    [retrying] = [s for s in detail["steps"] if s["name"] == "run.retrying"]
    assert retrying["output"]["retry_after"] == 30.0
    assert [m.text for m in await outbox(app)] == [UNREACHABLE]


@pytest.mark.parametrize(
    ("code", "error_type", "told"),
    [
        (402, "billing_error", "spend limit"),
        (400, "invalid_request_error", "rejected the request"),
        (403, "permission_error", "permissions"),
    ],
)
async def test_permanent_model_errors_are_not_retried(
    app: App, fake_anthropic: FakeAnthropic, code: int, error_type: str, told: str
) -> None:
    fake_anthropic.handler = lambda body: api.status(code, error_type)
    await send(app, "hello?")
    await run_inbox(app)
    assert len(fake_anthropic.requests) == 1
    [notice] = await outbox(app)
    assert told in notice.text
    assert await app.bus.counts(INBOUND) == {"dead": 1}


async def test_an_unreachable_api_is_transient(make_app: AppFactory) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    app = await make_app(
        anthropic_api_key="sk-ant-test-secret",
        anthropic_base_url=f"http://127.0.0.1:{closed_port}",
        model={"sdk_max_retries": 0, "timeout": 5},
    )
    await send(app, "anyone there?")
    await run_inbox(app)
    texts = [m.text for m in await outbox(app)]
    assert texts[0] == UNREACHABLE and "after 3 attempts" in texts[1]
    assert [r["status"] for r in await app.store.list_runs()] == ["dead_lettered", "failed", "failed", "failed"]


async def test_a_bug_is_apologised_for_without_its_exception_text(make_app: AppFactory) -> None:
    class Broken:
        name = "broken"

        async def complete(self, **kwargs: Any) -> Any:
            raise KeyError("internal detail /home/ann/secret")

    app = await make_app(Broken())
    await send(app, "hello")
    await run_inbox(app)
    [apology] = [m.text for m in await outbox(app)]
    assert "an internal error, which was logged" in apology and "secret" not in apology
    [entry] = await app.store.list_interactions()
    assert "KeyError" in entry["summary"]  # the owner's log keeps the detail
