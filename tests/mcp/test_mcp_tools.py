"""An MCP server's tools, through the real runner, the real ``anthropic`` SDK and the fake Messages
API, checking what the model was offered and what it received back."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from bot.app import App
from bot.bus import INBOUND
from bot.consent import unlabelled
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.mcp_http_server import HttpMcpServer
from tests.helpers import outbox, run_inbox
from tests.mcp.conftest import SECRET, START, TOKEN, eventually, pids, stdio, tool_results
from tests.runner.conftest import send

Build = Callable[..., Awaitable[App]]


def result_json(block: dict[str, Any]) -> dict[str, Any]:
    """The result the model read (a server's words come in their label)."""
    content = block["content"]
    text = content if isinstance(content, str) else content[0]["text"]
    return json.loads(unlabelled(text))


async def tool_steps(app: App) -> list[dict[str, Any]]:
    [run] = await app.store.list_runs(limit=1)
    detail = await app.store.get_run(run["id"])
    assert detail is not None
    return [step for step in detail["steps"] if step["kind"] == "tool"]


async def test_the_model_is_offered_the_allowed_tools_and_gets_their_text(
    with_servers: Build, fake_anthropic: FakeAnthropic
) -> None:
    app = await with_servers({"files": stdio(tools=["echo", "picture", "odd.name/with spaces"])})
    fake_anthropic.enqueue(api.tool_use(("mcp__files__echo", {"text": "hello from the server"})), api.text("Done."))
    await send(app, "echo something")
    await run_inbox(app)

    offered = {tool["name"]: tool for tool in fake_anthropic.requests[0].body["tools"]}
    assert "vault_write" in offered  # the built-in tools are still there
    mcp = sorted(name for name in offered if name.startswith("mcp__"))
    # Only the allowlisted tools, and not one whose name is not a plain name.
    assert mcp == ["mcp__files__echo", "mcp__files__picture"]
    echo = offered["mcp__files__echo"]
    # The server's own words, labelled as the server's (they taint a run unless it is trusted: tests/consent).
    assert echo["description"].startswith('<untrusted source="tool description of MCP server files"')
    assert unlabelled(echo["description"]) == "Echo the text back."
    assert echo["input_schema"]["type"] == "object"
    assert echo["input_schema"]["properties"]["text"]["type"] == "string"
    assert echo["input_schema"]["required"] == ["text"]

    [result] = tool_results(fake_anthropic.requests[1].body)
    assert "is_error" not in result
    assert result["content"].startswith('<untrusted source="MCP server files" id="')  # the server's words
    assert result_json(result) == {"success": True, "content": [{"type": "text", "text": "hello from the server"}]}
    [step] = await tool_steps(app)
    assert (step["name"], step["input"], step["is_error"]) == (
        "mcp__files__echo",
        {"text": "hello from the server"},
        False,
    )
    assert [m.text for m in await outbox(app)] == ["Done."]


async def test_an_image_reaches_the_model_as_an_image_block_and_never_the_trail_or_history(
    with_servers: Build, fake_anthropic: FakeAnthropic
) -> None:
    app = await with_servers({"files": stdio()})
    fake_anthropic.enqueue(api.tool_use(("mcp__files__picture", {})), api.text("A red dot."), api.text("Yes."))
    await send(app, "show me")
    await run_inbox(app)

    [result] = tool_results(fake_anthropic.requests[1].body)
    text, image = result["content"]
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    described = result_json({"content": text["text"]})["content"]
    assert described[0] == {"type": "text", "text": "a red dot"}
    assert described[1]["type"] == "image" and "data" not in described[1]
    assert described[2] == {"type": "resource", "uri": "file:///notes/dot.txt", "text": "dot notes"}

    [step] = await tool_steps(app)
    assert image["source"]["data"] not in json.dumps(step)
    await send(app, "still there?")
    await run_inbox(app)
    later = json.dumps(fake_anthropic.requests[2].body["messages"])
    assert image["source"]["data"] not in later and "not sent again" in later


async def test_a_server_error_is_a_failure_result_and_the_loop_goes_on(
    with_servers: Build, fake_anthropic: FakeAnthropic
) -> None:
    app = await with_servers({"files": stdio()})
    fake_anthropic.enqueue(
        api.tool_use(("mcp__files__refuse", {"why": "no"})),
        api.tool_use(("mcp__files__echo", {"text": "after"})),
        api.text("Done."),
    )
    await send(app, "try")
    await run_inbox(app)

    [failed] = tool_results(fake_anthropic.requests[1].body)
    assert failed["is_error"] is True
    body = result_json(failed)
    assert body["success"] is False and body["error_type"] == "server_error" and body["retryable"] is False
    assert "Error executing tool refuse" in body["error"]
    [after] = tool_results(fake_anthropic.requests[2].body)
    assert result_json(after)["content"] == [{"type": "text", "text": "after"}]


async def test_secrets_echoed_by_a_server_are_masked_before_the_model_trail_and_logs(
    with_servers: Build, fake_anthropic: FakeAnthropic, http_server: HttpMcpServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    app = await with_servers(
        {
            "files": stdio(env={"SECRET": SECRET}),
            "web": {"url": http_server.url, "headers": {"Authorization": f"Bearer {TOKEN}"}, "trusted": True},
        }
    )
    fake_anthropic.enqueue(
        api.tool_use(("mcp__files__secret", {}), ("mcp__web__whoami", {}), ("mcp__web__add", {"a": 2, "b": 3})),
        api.text("Done."),
    )
    await send(app, "tell me secrets")
    await run_inbox(app)

    secret, whoami, added = tool_results(fake_anthropic.requests[1].body)
    assert result_json(secret)["content"][0]["text"] == "the secret is ***!"
    assert result_json(whoami)["content"][0]["text"] == "you are ***"
    assert result_json(added)["content"][0]["text"] == "5"  # the header reached the server: it refuses without it
    everything = json.dumps([r.body for r in fake_anthropic.requests]) + json.dumps(await tool_steps(app))
    everything += caplog.text + repr(app.settings) + str(app.settings.model_dump())
    assert SECRET not in everything and TOKEN not in everything


async def test_a_server_that_dies_mid_call_fails_that_call_and_is_restarted_on_the_next(
    with_servers: Build, fake_anthropic: FakeAnthropic, pid_file: Path
) -> None:
    app = await with_servers({"files": stdio(env={"PID_FILE": str(pid_file)})})
    fake_anthropic.enqueue(
        api.tool_use(("mcp__files__die", {})),
        api.tool_use(("mcp__files__pid", {})),
        api.text("Done."),
    )
    await send(app, "die")
    await run_inbox(app)

    [died] = tool_results(fake_anthropic.requests[1].body)
    body = result_json(died)
    assert died["is_error"] is True and body["error_type"] == "unavailable" and body["retryable"] is True
    assert "files" in body["error"] and "restarted on the next call" in body["error"]
    [pid] = tool_results(fake_anthropic.requests[2].body)
    first, second = pids(pid_file)
    assert result_json(pid)["content"][0]["text"] == str(second) != str(first)
    assert [m.text for m in await outbox(app)] == ["Done."]


async def test_a_call_past_the_timeout_is_a_timeout_failure_and_the_next_call_works(
    with_servers: Build, fake_anthropic: FakeAnthropic
) -> None:
    app = await with_servers({"files": stdio(timeout=1)})
    fake_anthropic.enqueue(
        api.tool_use(("mcp__files__slow", {"seconds": 30})),
        api.tool_use(("mcp__files__echo", {"text": "awake"})),
        api.text("Done."),
    )
    await send(app, "be slow")
    await run_inbox(app)

    [slow] = tool_results(fake_anthropic.requests[1].body)
    body = result_json(slow)
    assert body["error_type"] == "timeout" and body["retryable"] is True and "1 s" in body["error"]
    [step, _] = await tool_steps(app)
    assert step["duration_ms"] < 10_000
    [echo] = tool_results(fake_anthropic.requests[2].body)
    assert result_json(echo)["content"][0]["text"] == "awake"


@pytest.mark.timeout(120)  # the call's own limit below, and the turn around it
async def test_ten_megabytes_are_refused_with_a_failure_result_not_sent_to_the_model(
    with_servers: Build, fake_anthropic: FakeAnthropic
) -> None:
    # Ten megabytes through the SDK take a few seconds, and more on a busy machine: not what is tested.
    app = await with_servers({"files": stdio(timeout=START)})
    fake_anthropic.enqueue(api.tool_use(("mcp__files__huge", {})), api.text("Too much."))
    await send(app, "everything")
    await run_inbox(app)

    [huge] = tool_results(fake_anthropic.requests[1].body)
    body = result_json(huge)
    assert body["error_type"] == "too_large" and "10.5 MB" in body["error"]
    assert len(json.dumps(fake_anthropic.requests[1].body)) < 100_000
    assert [m.text for m in await outbox(app)] == ["Too much."]


async def test_garbage_on_stdout_is_skipped_and_the_answer_still_arrives(
    with_servers: Build, fake_anthropic: FakeAnthropic
) -> None:
    app = await with_servers({"files": stdio()})
    fake_anthropic.enqueue(api.tool_use(("mcp__files__noisy", {})), api.text("Done."))
    await send(app, "noise")
    await run_inbox(app)

    [noisy] = tool_results(fake_anthropic.requests[1].body)
    assert result_json(noisy)["content"][0]["text"] == "still here"


@pytest.mark.parametrize(
    ("mode", "start_timeout", "why"),
    [
        # The crash ends the wait when the server exits, whenever that is: on a loaded machine its
        # imports alone can take longer than 3 s.
        ("crash", START, "fatal: cannot open the database /nowhere"),
        ("silent", 3, "did not answer within 3 s of starting"),
        ("garbage", 3, "did not answer within 3 s of starting"),
    ],
)
async def test_a_server_that_cannot_start_costs_only_its_own_tools(
    with_servers: Build, fake_anthropic: FakeAnthropic, mode: str, start_timeout: float, why: str
) -> None:
    app = await with_servers({"broken": stdio(mode, start_timeout=start_timeout), "files": stdio()})
    fake_anthropic.enqueue(api.tool_use(("mcp__files__echo", {"text": "fine"})), api.text("Done."))
    await send(app, "hello")
    await run_inbox(app)

    offered = [tool["name"] for tool in fake_anthropic.requests[0].body["tools"]]
    assert "mcp__files__echo" in offered and not any(name.startswith("mcp__broken__") for name in offered)
    [echo] = tool_results(fake_anthropic.requests[1].body)
    assert result_json(echo)["content"][0]["text"] == "fine"
    assert app.mcp is not None
    broken = next(link for link in app.mcp.links if link.name == "broken")
    assert broken.state == "failed" and broken.reason is not None and why in broken.reason


async def test_the_guards_hold_for_mcp_tools_as_for_built_in_ones(
    with_servers: Build, fake_anthropic: FakeAnthropic
) -> None:
    app = await with_servers({"files": stdio()})
    long = " ".join(f"word{i}" for i in range(3000))
    fake_anthropic.enqueue(
        api.tool_use(("mcp__files__echo", {"text": long})),
        api.tool_use(("mcp__files__echo", {"text": "again"})),
        api.tool_use(("mcp__files__echo", {"text": "again"})),
        api.tool_use(("mcp__files__echo", {"text": "again"})),
        api.text("unreached"),
    )
    await send(app, "repeat")
    await run_inbox(app)

    [truncated] = tool_results(fake_anthropic.requests[1].body)
    assert "words omitted]" in truncated["content"] and "word2999" in truncated["content"]
    # The third identical call stopped the run before it reached the server, and the model was not asked again.
    assert len(fake_anthropic.requests) == 4
    [run] = await app.store.list_runs(limit=1)
    assert run["status"] == "stopped"
    assert len(await tool_steps(app)) == 3


async def test_a_secret_in_garbage_the_server_prints_never_reaches_the_log(
    with_servers: Build, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    app = await with_servers({"junk": stdio("garbage", env={"SECRET": SECRET}, start_timeout=3)})
    assert app.mcp is not None and app.mcp.links[0].state == "failed"
    assert "Failed to parse JSONRPC message" in caplog.text  # the SDK logged that it read garbage
    # Not the secret, nor a piece of it (pydantic quotes a long line cut in the middle).
    assert not any(SECRET[i : i + 8] in caplog.text for i in range(len(SECRET) - 7))


async def test_a_re_run_calls_the_mcp_tool_again_and_the_trail_shows_both_calls(
    with_servers: Build, fake_anthropic: FakeAnthropic, pid_file: Path
) -> None:
    app = await with_servers({"files": stdio(env={"PID_FILE": str(pid_file)})})
    fake_anthropic.enqueue(
        api.tool_use(("mcp__files__echo", {"text": "book the table"})),
        api.status(500),  # the run fails after the call; the bus runs the message again
        api.tool_use(("mcp__files__echo", {"text": "book the table"})),
        api.text("Booked."),
    )
    await send(app, "book a table")
    await run_inbox(app)

    runs = await app.store.list_runs()
    assert len(runs) == 2 and [m.text for m in await outbox(app)][-1] == "Booked."
    calls = []
    for run in runs:
        detail = await app.store.get_run(run["id"])
        assert detail is not None
        calls += [s["input"] for s in detail["steps"] if s["name"] == "mcp__files__echo"]
    assert calls == [{"text": "book the table"}] * 2  # not exactly-once: the server was asked twice


async def test_conversations_at_once_share_one_session_and_one_server_process(
    with_servers: Build, fake_anthropic: FakeAnthropic, pid_file: Path
) -> None:
    app = await with_servers({"files": stdio(env={"PID_FILE": str(pid_file)})})

    def answer(body: dict[str, Any]) -> api.Canned:
        last = body["messages"][-1]["content"]
        if isinstance(last, list) and any(b.get("type") == "tool_result" for b in last):
            return api.text("Done.")
        return api.tool_use(("mcp__files__pid", {}))

    fake_anthropic.handler = answer
    for conversation in ("terminal:ann", "terminal:bob", "telegram:42"):
        await send(app, "which process?", conversation=conversation)
    await run_inbox(app)

    [server] = pids(pid_file)
    answered = [tool_results(r.body) for r in fake_anthropic.requests if tool_results(r.body)]
    assert len(answered) == 3
    assert {result_json(r)["content"][0]["text"] for [r] in answered} == {str(server)}


async def test_a_handler_paused_past_its_lease_makes_no_mcp_call_once_another_process_claimed_its_message(
    with_servers: Build, fake_anthropic: FakeAnthropic, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Two processes on one store (the bus-only mode): each its own app, its own server, one database.
    sent = tmp_path / "sent-mail"
    servers = {"mail": stdio(env={"OUTBOX_FILE": str(sent)}, tools=["send_email"])}
    # Leases long enough that no heartbeat renews one while the test runs: the lease is run out by hand.
    first, second = [await with_servers(servers, bus={"lease_seconds": 3600}) for _ in range(2)]
    paused, resume = threading.Event(), threading.Event()

    def answer(body: dict[str, Any]) -> api.Canned:
        if tool_results(body):
            return api.text("Mail sent.")
        if not paused.is_set():  # the first process's model call: it stalls there, past its lease
            paused.set()
            assert resume.wait(START)
        return api.tool_use(("mcp__mail__send_email", {"to": "bob@example.com", "body": "see you at 8"}))

    fake_anthropic.handler = answer
    await send(first, "mail Bob that I will be there at 8")
    stalled = asyncio.create_task(run_inbox(first))
    await eventually(paused.is_set, START)
    await first.db.execute("UPDATE bus_messages SET lease_until = 0 WHERE topic = ?", (INBOUND,))  # time passes
    await run_inbox(second)  # the other process claims the message again, and answers it
    resume.set()
    with caplog.at_level(logging.WARNING, logger="bot.bus.worker"):
        await stalled

    assert len(sent.read_text().splitlines()) == 1  # Bob got one mail, not two
    assert len(fake_anthropic.requests) == 3  # the stalled run asked the model nothing more
    assert [m.text for m in await outbox(first)] == ["Mail sent."]
    assert "left to its new claim" in caplog.text
    assert await first.bus.counts(INBOUND) == {"done": 1}  # answered once, and not dead-lettered
