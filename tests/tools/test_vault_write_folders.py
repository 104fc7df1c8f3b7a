"""vault_write with a hostile folder: the note lands in a portable folder and the result says where."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from bot.app import App
from bot.tools import ToolContext, build_dispatcher


async def test_the_result_path_is_where_the_note_really_went(make_app: Callable[..., Awaitable[App]]) -> None:
    app = await make_app()
    tools = build_dispatcher(app.notes, app.bus, app.store)
    context = ToolContext(conversation="t:ann", channel="terminal", recipient="ann", run_id="r", inbound_id="in-1")

    written = await tools.call(
        "vault_write", {"folder": "<Work>/Q3: plan?", "title": "Budget", "content": "numbers"}, context
    )

    assert written.result["success"] and written.result["path"] == "Work/Q3 plan/Budget.md"
    assert "numbers" in (app.notes.root / "Work" / "Q3 plan" / "Budget.md").read_text()
    listed = await tools.call("vault_list", {"folder": "Work"}, context)
    assert listed.result["folders"] == ["Work/Q3 plan"]
