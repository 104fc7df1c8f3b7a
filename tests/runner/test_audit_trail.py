"""Reviewing what it did: a run's trail keeps each model call's new message, answer and tokens, and
each tool call's input and result, as `vaultbot runs show` and the review page show them.

Through the real app, the real ``anthropic`` SDK and the fake Messages API.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from bot.app import App
from bot.clock import unstamp
from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.scripted_model import ScriptedModel, call, say
from tests.fakes.web_server import FakeWeb
from tests.helpers import run_inbox
from tests.runner.conftest import send

AppFactory = Callable[..., Awaitable[App]]

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


async def trail(app: App) -> list[tuple[int, str, str]]:
    """The one run's steps as (index, kind, name), in index order."""
    [run] = await app.store.list_runs()
    detail = await app.store.get_run(run["id"])
    assert detail is not None
    return [(step["index"], step["kind"], step["name"]) for step in detail["steps"]]


async def test_a_failure_found_in_the_middle_of_a_round_sits_between_the_tool_calls_it_came_between(
    make_app: AppFactory,
) -> None:
    missing = [("vault_read", {"path": f"Nowhere/Note {n}"}) for n in (1, 2, 3)]
    model = ScriptedModel()
    model.enqueue(call(*missing, ("vault_list", {"folder": ""})), say("Nothing there."))
    app = await make_app(model)
    await send(app, "find my notes")
    await run_inbox(app)
    assert await trail(app) == [
        (0, "model", "scripted"),
        (1, "tool", "vault_read"),
        (2, "tool", "vault_read"),
        (3, "tool", "vault_read"),
        (4, "event", "failure.detected"),  # vault_read failed 3 times in a row…
        (5, "event", "run.escalated"),  # …with one error: it needs the user's attention
        (6, "tool", "vault_list"),
        (7, "model", "scripted"),
    ]


async def test_a_round_cut_short_by_the_worker_stopping_keeps_the_steps_of_what_it_had_done(
    make_app: AppFactory,
) -> None:
    with FakeWeb() as web:
        web.dribble("/slow", endless=True)
        model = ScriptedModel()
        model.enqueue(call(("vault_write", WRITE), ("clip_link", {"url": web.url("/slow")})), say("Done."))
        app = await make_app(model, clip={"allow_private": True})
        await send(app, "remember oat milk, and clip this page")
        worker = app.runner_worker()
        working = asyncio.create_task(worker.run())
        async with asyncio.timeout(10):
            while not web.hits.get("/slow"):  # the note is written and the page is being fetched
                await app.bus.wait(None, timeout=0.01)
        await worker.stop(grace=0)
        await working
    assert await trail(app) == [(0, "model", "scripted"), (1, "tool", "vault_write")]
    assert (app.notes.root / "Inbox" / "Milk.md").is_file()
