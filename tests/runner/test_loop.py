"""The model ↔ tools loop with a scripted model and the real tools."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.app import App
from bot.runner import Limits, run_turn
from bot.runner.guards import truncate_middle
from bot.tools import ToolContext, build_dispatcher
from tests.fakes.scripted_model import ScriptedModel, call, say
from tests.helpers import Steps, outbox


@pytest.fixture
async def app(make_app: Callable[..., Awaitable[App]]) -> App:
    return await make_app()


async def turn(app: App, model: ScriptedModel, text: str = "hi", limits: Limits | None = None) -> tuple[Any, Steps]:
    steps = Steps()
    context = ToolContext(conversation="c", channel="terminal", recipient="ann", run_id="r", inbound_id="in-1")
    result = await run_turn(
        model=model,
        dispatcher=build_dispatcher(app.notes, app.bus, app.store),
        system="be useful",
        history=[],
        text=text,
        context=context,
        recorder=steps,
        limits=limits or Limits(),
    )
    return result, steps


async def test_a_tool_step_records_how_long_the_tool_took(app: App) -> None:
    # The audit trail shows each step's duration: a real note write (a thread hop, a new file, two
    # fsyncs) takes more than 10 µs, and no longer than the whole turn around it.
    model = ScriptedModel()
    model.enqueue(call(("vault_write", {"folder": "Inbox", "title": "Milk", "content": "oat"})), say("Saved it."))
    started = time.perf_counter()
    _, steps = await turn(app, model)
    whole_turn_ms = (time.perf_counter() - started) * 1000
    [tool] = [step for step in steps.steps if step["kind"] == "tool"]
    assert 0.01 <= tool["duration_ms"] <= whole_turn_ms
    # The model's steps too (an in-process model here: more than 0.1 µs of Python).
    assert all(0.0001 <= step["duration_ms"] <= whole_turn_ms for step in steps.steps if step["kind"] == "model")


async def test_several_tool_calls_in_one_response_all_run_and_the_model_sees_every_result(app: App) -> None:
    model = ScriptedModel()
    model.enqueue(
        call(
            ("vault_write", {"folder": "Inbox", "title": "Milk", "content": "oat"}),
            ("vault_read", {"path": "../../etc/passwd"}),
            ("no_such_tool", {}),
        ),
        say("Saved it."),
    )
    result, steps = await turn(app, model)
    assert result.success and result.final_text == "Saved it."
    assert result.tools_called == ["vault_write", "vault_read", "no_such_tool"]
    content = model.calls[1][-1]["content"]
    results = [b for b in content if b["type"] == "tool_result"]
    assert [b["type"] for b in content[:3]] == ["tool_result"] * 3  # results first, then hints
    assert [b.get("is_error", False) for b in results] == [False, True, True]
    assert json.loads(results[1]["content"])["error_type"] == "path_not_allowed"
    hints = [b["text"] for b in content[3:]]
    assert any("vault_read error (path_not_allowed) is permanent" in h for h in hints)
    assert [(s["kind"], s["name"]) for s in steps.steps] == [
        ("model", "scripted"),
        ("tool", "vault_write"),
        ("tool", "vault_read"),
        ("tool", "no_such_tool"),
        ("model", "scripted"),
    ]
    assert result.usage.input_tokens == 20
    assert (app.notes.root / "Inbox" / "Milk.md").exists()


async def test_every_call_after_a_guard_stop_is_answered_not_run_with_the_reason(app: App) -> None:
    # The stopped turn stays in the history: each refused call's result says why, in the failure form.
    same = ("vault_search", {"query": "milk"})
    model = ScriptedModel()
    model.enqueue(call(same, same, same, ("vault_list", {})))
    result, _ = await turn(app, model)
    assert result.status == "stopped" and result.tools_called == ["vault_search", "vault_search"]
    [answer] = [m for m in result.messages if m["role"] == "user" and isinstance(m["content"], list)]
    results = [json.loads(b["content"]) for b in answer["content"] if b["type"] == "tool_result"]
    refused = {
        "success": False,
        "error": f"Not run: {result.reason}.",
        "error_type": "guard_stopped",
        "retryable": False,
    }
    assert results[2:] == [refused, refused]


async def test_the_tool_call_cap_stops_a_runaway_run_with_a_reason(app: App) -> None:
    model = ScriptedModel(lambda messages: call(("vault_list", {"folder": "", "limit": len(messages)})))
    result, _ = await turn(app, model, limits=Limits(max_tool_calls=4))
    assert result.status == "stopped"
    assert "limit of 4 tool calls" in (result.reason or "")
    assert len(result.tools_called) == 4


async def test_the_same_call_three_times_stops_the_run(app: App) -> None:
    model = ScriptedModel(lambda messages: call(("vault_search", {"limit": 5, "query": "milk"})))
    result, _ = await turn(app, model)
    assert result.status == "stopped"
    assert "same input 3 times" in (result.reason or "")
    assert result.tools_called == ["vault_search", "vault_search"]


async def test_the_same_call_three_times_within_ten_calls_stops_the_run(app: App) -> None:
    same = ("vault_search", {"query": "milk"})
    others = iter([("vault_list", {"folder": "", "limit": n}) for n in range(1, 10)])
    # same, x, y, same, z, w, same: never twice in a row, but three times within the last ten.
    model = ScriptedModel()
    model.enqueue(*(call(c) for c in (same, next(others), next(others), same, next(others), next(others), same)))
    result, _ = await turn(app, model)
    assert result.status == "stopped"
    assert "same input 3 times within 10 calls" in (result.reason or "")
    assert result.tools_called == [
        "vault_search",
        "vault_list",
        "vault_list",
        "vault_search",
        "vault_list",
        "vault_list",
    ]


async def test_the_same_input_with_its_keys_in_another_order_counts_as_a_repeat(app: App) -> None:
    # The model does not keep key order; the guard compares inputs canonically.
    one, other = {"query": "milk", "limit": 5}, {"limit": 5, "query": "milk"}
    model = ScriptedModel()
    model.enqueue(*(call(("vault_search", i)) for i in (one, other, one)), say("Gave up."))
    result, _ = await turn(app, model)
    assert result.status == "stopped"
    assert "same input 3 times" in (result.reason or "")
    assert result.tools_called == ["vault_search", "vault_search"]


async def test_calls_that_repeat_only_further_apart_than_ten_go_on(app: App) -> None:
    same = ("vault_search", {"query": "milk"})
    calls = [same, *[("vault_list", {"folder": "", "limit": n}) for n in range(1, 10)], same]
    model = ScriptedModel()
    model.enqueue(*(call(c) for c in calls), say("Nothing about milk."))
    result, _ = await turn(app, model, limits=Limits(max_tool_calls=20))
    assert result.status == "completed" and len(result.tools_called) == 11


async def test_only_the_last_ten_calls_count_so_a_long_run_may_repeat_a_call_often(app: App) -> None:
    same = ("vault_search", {"query": "milk"})
    others = [("vault_list", {"folder": "", "limit": n}) for n in range(1, 21)]
    calls = [same, *others[:10], same, *others[10:], same]  # three times, but never twice within ten calls
    model = ScriptedModel()
    model.enqueue(*(call(c) for c in calls), say("Nothing about milk."))
    result, _ = await turn(app, model, limits=Limits(max_tool_calls=30))
    assert result.status == "completed" and result.tools_called.count("vault_search") == 3


async def test_a_long_tool_result_reaches_the_model_cut_in_the_middle(app: App) -> None:
    words = [f"w{i}" for i in range(3000)]
    app.notes.write("", "Long", " ".join(words))
    model = ScriptedModel()
    model.enqueue(call(("vault_read", {"path": "Long"})), say("It is long."))
    result, steps = await turn(app, model)
    assert result.success
    [block] = model.calls[1][-1]["content"]
    seen = block["content"].split(" ")
    marker = re.search(r" \[(\d+) words omitted\] ", block["content"])
    assert marker is not None
    whole = json.dumps(steps.steps[1]["output"], ensure_ascii=False).split(" ")  # the audit trail keeps it all
    assert seen[:500] == whole[:500] and seen[-500:] == whole[-500:]
    assert int(marker.group(1)) == len(whole) - 1000
    assert "w1500" not in seen and "w0" in block["content"] and "w2999" in block["content"]


async def test_each_send_message_in_a_run_reaches_the_user(app: App) -> None:
    model = ScriptedModel()
    model.enqueue(
        call(("send_message", {"text": "Looking…"})),
        call(("send_message", {"text": "Found it."}), ("send_message", {"text": "Anything else?"})),
        say(""),
    )
    await turn(app, model)
    assert [(m.text, m.sequence) for m in await outbox(app)] == [
        ("Looking…", 1),
        ("Found it.", 2),
        ("Anything else?", 3),
    ]


def test_long_results_keep_their_first_and_last_500_words() -> None:
    at_limit = " ".join(f"w{i}" for i in range(1000))
    assert truncate_middle(at_limit) == at_limit
    long = " ".join(f"w{i}" for i in range(1500))
    cut = truncate_middle(long)
    assert cut.startswith("w0 w1 ") and cut.endswith(" w1498 w1499")
    assert "[500 words omitted]" in cut
    assert len(cut.split(" ")) == 1000 + 3
