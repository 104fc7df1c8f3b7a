"""The six tools through the dispatcher, on a real vault, bus and store."""

from __future__ import annotations

import errno
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from pydantic import BaseModel

from bot.app import App
from bot.clock import stamped
from bot.tools import Dispatcher, ScheduleMessage, ToolContext, build_dispatcher, queue_notice
from tests.helpers import DiskFaults, outbox

HOSTILE_PATHS = [
    "../escape",
    "../../etc/passwd",
    "/etc/passwd",
    "a/../../x",
    ".obsidian",
    ".git/config",
    "C:\\Windows",
    "a\x00b",
]


@pytest.fixture
async def app(make_app: Callable[..., Awaitable[App]]) -> App:
    return await make_app()


@pytest.fixture
def tools(app: App) -> Dispatcher:
    return build_dispatcher(app.notes, app.bus, app.store)


@pytest.fixture
def context() -> ToolContext:
    return ToolContext(
        conversation="terminal:ann", channel="terminal", recipient="ann", run_id="run-1", inbound_id="in-1"
    )


def outside(tmp_path: Path) -> set[Path]:
    """Every file under tmp_path that is not in the vault or the database."""
    return {
        p
        for p in tmp_path.rglob("*")
        if p.is_file() and "vault" not in p.relative_to(tmp_path).parts and not p.name.startswith("vaultbot.db")
    }


@pytest.mark.parametrize("path", HOSTILE_PATHS)
@pytest.mark.parametrize(
    ("tool", "make_input"),
    [
        ("vault_write", lambda p: {"folder": p, "title": "pwned", "content": "x"}),
        ("vault_read", lambda p: {"path": p}),
        ("vault_list", lambda p: {"folder": p}),
    ],
)
async def test_every_vault_tool_refuses_paths_that_leave_the_vault(
    tools: Dispatcher,
    context: ToolContext,
    tmp_path: Path,
    tool: str,
    make_input: Callable[[str], dict[str, Any]],
    path: str,
) -> None:
    before = outside(tmp_path)
    outcome = await tools.call(tool, make_input(path), context)
    assert outcome.is_error
    assert outcome.result["success"] is False
    assert outcome.result["error_type"] == "path_not_allowed"
    assert outcome.result["retryable"] is False
    assert outside(tmp_path) == before


async def test_a_symlink_out_of_the_vault_is_refused(
    tools: Dispatcher, context: ToolContext, app: App, tmp_path: Path
) -> None:
    secret_dir = tmp_path / "secrets"
    secret_dir.mkdir()
    (secret_dir / "key.md").write_text("hunter2")
    (app.notes.root / "link").symlink_to(secret_dir)
    read = await tools.call("vault_read", {"path": "link/key.md"}, context)
    write = await tools.call("vault_write", {"folder": "link", "title": "t", "content": "x"}, context)
    assert read.result["error_type"] == write.result["error_type"] == "path_not_allowed"
    assert "hunter2" not in str(read.result)
    assert [p.name for p in secret_dir.iterdir()] == ["key.md"]


async def test_a_note_written_by_the_tool_can_be_read_listed_and_found(
    tools: Dispatcher, context: ToolContext, app: App
) -> None:
    written = await tools.call(
        "vault_write",
        {"folder": "Shopping", "title": "Oat milk", "content": "Buy two cartons", "tags": ["errand"], "confidence": 90},
        context,
    )
    assert written.result["success"] and written.result["path"] == "Shopping/Oat milk.md"
    on_disk = (app.notes.root / "Shopping" / "Oat milk.md").read_text()
    assert on_disk.startswith("---\n") and "confidence: 90" in on_disk and "Buy two cartons" in on_disk
    read = await tools.call("vault_read", {"path": "Shopping/Oat milk"}, context)
    assert read.result["content"].strip() == "Buy two cartons"
    assert read.result["frontmatter"]["tags"] == ["errand"]
    listed = await tools.call("vault_list", {"folder": ""}, context)
    assert listed.result["folders"] == ["Shopping"]
    found = await tools.call("vault_search", {"query": "cartons"}, context)
    assert [hit["path"] for hit in found.result["results"]] == ["Shopping/Oat milk.md"]


async def test_creating_a_taken_title_never_overwrites(tools: Dispatcher, context: ToolContext, app: App) -> None:
    first = await tools.call("vault_write", {"folder": "", "title": "Idea", "content": "one"}, context)
    again = await tools.call("vault_write", {"folder": "", "title": "Idea", "content": "one"}, context)
    other = await tools.call("vault_write", {"folder": "", "title": "Idea", "content": "two"}, context)
    assert again.result["path"] == first.result["path"] and again.result["unchanged"]
    assert other.result["path"] != first.result["path"] and other.result["renamed"]
    assert "one" in (app.notes.root / first.result["path"]).read_text()


@pytest.mark.parametrize(
    ("tool", "tool_input", "complaint"),
    [
        ("vault_write", {"folder": "", "content": "no title"}, "title"),
        ("vault_write", {"folder": "", "title": "t", "content": "x", "confidence": 150}, "confidence"),
        ("vault_write", {"folder": "", "title": "t", "content": "x", "mode": "overwrite"}, "mode"),
        ("vault_search", {"query": ""}, "query"),
        ("send_message", {"text": "x" * 10_000_000}, "text"),
        ("send_message", "not an object", "input"),
        ("log_interaction", {}, "summary"),
    ],
)
async def test_invalid_input_is_a_clear_failure_not_a_crash(
    tools: Dispatcher, context: ToolContext, tool: str, tool_input: Any, complaint: str
) -> None:
    outcome = await tools.call(tool, tool_input, context)
    assert outcome.is_error
    assert outcome.result["error_type"] == "invalid_input"
    assert complaint in outcome.result["error"]
    assert len(outcome.result["error"]) < 1000


async def test_an_unknown_tool_is_a_failure_that_lists_the_real_ones(tools: Dispatcher, context: ToolContext) -> None:
    outcome = await tools.call("rm_rf", {"path": "/"}, context)
    assert outcome.is_error and outcome.result["error_type"] == "unknown_tool"
    assert "vault_write" in outcome.result["error"]


async def test_send_message_goes_to_the_runs_recipient_whatever_the_model_says(
    tools: Dispatcher, context: ToolContext, app: App
) -> None:
    outcome = await tools.call("send_message", {"text": "hi", "recipient": "mallory", "chat_id": 666}, context)
    assert outcome.result == {"success": True}
    [sent] = await outbox(app)
    assert (sent.recipient, sent.text, sent.in_reply_to, sent.sequence) == ("ann", "hi", "in-1", 1)


@pytest.mark.parametrize(
    "error",
    [OSError(errno.ENOSPC, "No space left on device"), PermissionError(errno.EACCES, "Permission denied")],
)
async def test_a_disk_error_is_a_retryable_storage_failure_that_writes_nothing(
    tools: Dispatcher, context: ToolContext, app: App, monkeypatch: pytest.MonkeyPatch, error: OSError
) -> None:
    DiskFaults(monkeypatch, error=error)
    outcome = await tools.call("vault_write", {"folder": "Inbox", "title": "Milk", "content": "oat"}, context)
    assert outcome.is_error
    assert outcome.result["error_type"] == "storage_error" and outcome.result["retryable"] is True
    assert error.strerror in outcome.result["error"] and str(app.notes.root) not in outcome.result["error"]
    assert list(app.notes.root.rglob("*.md")) == []


async def test_every_send_message_of_a_run_is_its_own_reply(tools: Dispatcher, context: ToolContext, app: App) -> None:
    for text in ("On it.", "Done: filed under Inbox.", "Anything else?"):
        assert (await tools.call("send_message", {"text": text}, context)).result == {"success": True}
    replies = await outbox(app)
    assert [(m.text, m.sequence) for m in replies] == [
        ("On it.", 1),
        ("Done: filed under Inbox.", 2),
        ("Anything else?", 3),
    ]
    # The same run again after a crash (a fresh context for the same inbound message) adds nothing.
    again = ToolContext(
        conversation=context.conversation, channel="terminal", recipient="ann", run_id="run-2", inbound_id="in-1"
    )
    for text in ("On it.", "Done: filed under Inbox.", "Anything else?"):
        await tools.call("send_message", {"text": text}, again)
    assert len(await outbox(app)) == 3


async def test_a_notice_is_told_once_per_message_and_a_daily_one_once_per_day(app: App, context: ToolContext) -> None:
    later = ToolContext(
        conversation=context.conversation, channel="terminal", recipient="ann", run_id="run-2", inbound_id="in-2"
    )
    for ctx in (context, context, later):  # the first message's run again after a crash, then the next message
        await queue_notice(app.bus, ctx, f"I stopped here ({ctx.inbound_id}).", key="stopped")
    for ctx in (context, later):
        await queue_notice(app.bus, ctx, "Budget spent.", key="budget-spent", once_per="2026-11-23")
    assert [m.text for m in await outbox(app)] == ["I stopped here (in-1).", "I stopped here (in-2).", "Budget spent."]


async def test_log_interaction_lands_in_the_log(tools: Dispatcher, context: ToolContext, app: App) -> None:
    outcome = await tools.call("log_interaction", {"summary": "Filed a note", "category": "note"}, context)
    [entry] = await app.store.list_interactions()
    assert outcome.result == {"success": True, "id": entry["id"]}
    assert (entry["summary"], entry["category"], entry["run_id"]) == ("Filed a note", "note", "run-1")


async def test_a_crashing_tool_becomes_a_retryable_failure(context: ToolContext) -> None:
    class Empty(BaseModel):
        pass

    class Broken:
        name = "broken"
        description = "always crashes"
        input_model = Empty

        async def run(self, input: Empty, context: ToolContext) -> dict[str, Any]:
            raise ZeroDivisionError("boom")

    outcome = await Dispatcher([Broken()]).call("broken", {}, context)
    assert outcome.is_error and outcome.result["error_type"] == "internal_error" and outcome.result["retryable"]


def test_the_six_tools_are_offered_with_the_last_marked_for_caching(tools: Dispatcher) -> None:
    definitions = tools.definitions()
    assert [d["name"] for d in definitions] == [
        "vault_write",
        "vault_read",
        "vault_list",
        "vault_search",
        "log_interaction",
        "send_message",
    ]
    assert definitions[-1]["cache_control"] == {"type": "ephemeral"}
    assert all("cache_control" not in d for d in definitions[:-1])
    assert set(definitions[0]["input_schema"]["required"]) == {"folder", "title", "content"}


async def test_search_filters_by_tag_and_folder(tools: Dispatcher, context: ToolContext) -> None:
    for folder, title, tags in [("Work", "Budget", ["finance"]), ("Home", "Budget home", ["family"])]:
        await tools.call(
            "vault_write", {"folder": folder, "title": title, "content": "the budget", "tags": tags}, context
        )
    by_tag = await tools.call("vault_search", {"query": "budget", "tags": ["family"]}, context)
    by_folder = await tools.call("vault_search", {"query": "budget", "folder": "Work"}, context)
    escape = await tools.call("vault_search", {"query": "budget", "folder": "../.."}, context)
    assert [h["path"] for h in by_tag.result["results"]] == ["Home/Budget home.md"]
    assert [h["path"] for h in by_folder.result["results"]] == ["Work/Budget.md"]
    assert escape.result["error_type"] == "path_not_allowed"


def test_schedule_message_tells_the_model_the_time_is_on_each_message() -> None:
    # The time left the system prompt (so the prompt cache survives the clock); a tool that still
    # sends the model looking there leaves it guessing what "tomorrow at 9" is.
    description = ScheduleMessage.description
    assert "system prompt" not in description
    [example] = re.findall(r"\[[^\]]*\]", description)
    assert stamped("x", datetime(2026, 11, 23, 13, 5, tzinfo=UTC), ZoneInfo("Europe/Berlin")) == f"{example} x"
