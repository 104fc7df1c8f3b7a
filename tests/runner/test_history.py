"""What the model sees of earlier turns: whole turns, newest first, compacted, within a budget."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bot.app import App
from bot.db import Database
from bot.runner.closing import closed
from bot.runner.history import compact, estimate_tokens, fit
from bot.store import Store, Turn
from tests.fakes.scripted_model import ScriptedModel, say
from tests.runner.test_commands import send


def turn(i: int, result: str = "ok") -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": f"question {i}"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": f"t{i}", "name": "vault_read", "input": {"path": f"n{i}"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{i}", "content": result}]},
        {"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}]},
    ]


def stored(messages: list[dict[str, Any]]) -> Turn:
    kept = compact(messages)
    return Turn(kept, estimate_tokens(kept))


def test_the_newest_whole_turns_that_fit_the_budget_are_kept_in_order() -> None:
    turns = [stored(turn(i)) for i in range(50)]
    one = max(t.tokens for t in turns[-3:])
    history = fit(turns, budget_tokens=one * 3 + 1)
    assert [m["content"] for m in history if m["role"] == "user" and isinstance(m["content"], str)] == [
        "question 47",
        "question 48",
        "question 49",
    ]
    assert history[0]["role"] == "user"  # never starts inside a turn
    assert fit(turns, budget_tokens=0) == []


def test_a_turn_without_a_stored_cost_is_estimated() -> None:
    assert fit([Turn(turn(1), 0)], budget_tokens=5) == []
    assert len(fit([Turn(turn(1), 0)], budget_tokens=10_000)) == 4


def test_long_tool_results_and_inputs_are_compacted_but_stay_paired() -> None:
    big = "x" * 50_000
    long_turn = turn(1, result=big)
    long_turn[1]["content"][0]["input"] = {"folder": "", "title": "t", "content": big}
    [_, use, result, _] = fit([stored(long_turn)], budget_tokens=10_000)
    assert len(result["content"][0]["content"]) < 400 and "compacted from history" in result["content"][0]["content"]
    assert len(use["content"][0]["input"]["content"]) < 400 and use["content"][0]["input"]["title"] == "t"
    assert result["content"][0]["tool_use_id"] == use["content"][0]["id"]


async def test_a_long_conversation_costs_the_model_no_more_than_the_budget(
    make_app: Callable[..., Awaitable[App]],
) -> None:
    model = ScriptedModel(lambda messages: say("a reply that is long enough to count " * 20))
    app = await make_app(model, model={"history_turns": 1000, "history_tokens": 2_000})
    for i in range(30):
        await send(app, f"message number {i} " * 20)
    sizes = [estimate_tokens(call[:-1]) for call in model.calls]
    assert max(sizes) <= 2_000
    assert sizes[-1] > 1_000  # the budget is used, not left empty


async def test_a_stored_turn_reaches_the_model_closed_on_every_message_and_only_in_its_own_database(
    tmp_path: Path,
) -> None:
    stopped = turn(1)[:2]  # stored open: a tool_use with no result and no reply (an older version)
    finished = turn(2)
    loads = {}
    for name, messages in (("stopped", stopped), ("finished", finished)):
        db = await Database.open(tmp_path / f"{name}.db")
        try:
            store = Store(db)
            await store.append_turn("terminal:ann", "in-1", messages)  # row id 1 in both databases
            loads[name] = [fit(await store.load_history("terminal:ann", 20), 10_000) for _ in range(3)]
        finally:
            await db.close()
    assert loads["stopped"] == [closed(stopped)] * 3
    assert loads["stopped"][0][-1]["role"] == "assistant" and loads["stopped"][0][2]["content"][0]["is_error"]
    assert loads["finished"] == [finished] * 3
