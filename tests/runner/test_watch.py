"""Failure detection and error judgement, alone and inside real runs on the real tools and vault."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bot.app import App
from bot.bus import INBOUND, InboundMessage, Sender
from bot.runner import Limits, run_turn
from bot.runner.watch import RunWatch, classify
from bot.tools import ToolContext, build_dispatcher, failure
from tests.fakes.scripted_model import ScriptedModel, call, say
from tests.helpers import DiskFaults, Steps, outbox, run_inbox

OK = {"success": True}


def broken(error_type: str = "storage_error") -> dict[str, Any]:
    return failure("it broke", error_type, retryable=error_type == "storage_error")


@pytest.mark.parametrize(
    ("error_type", "retryable", "kind"),
    [
        ("path_not_allowed", False, "permanent"),
        ("invalid_input", False, "permanent"),
        ("unknown_tool", False, "permanent"),
        ("storage_error", True, "transient"),
        ("internal_error", True, "transient"),
        ("timeout", False, "transient"),  # the kind decides, whatever the flag says
        ("changed_on_disk", True, "transient"),  # or the tool's own word that a retry may help
        ("changed_on_disk", False, "replan"),
        ("not_found", False, "replan"),
    ],
)
def test_tool_errors_are_sorted_by_whether_retrying_can_help(error_type: str, retryable: bool, kind: str) -> None:
    assert classify(error_type, retryable) == kind


def test_the_same_tool_failing_three_times_in_a_row_is_a_pattern_reported_once() -> None:
    watch = RunWatch(max_tool_calls=50)
    assert watch.after_tool("vault_write", broken(), True).findings == []
    assert watch.after_tool("vault_write", broken(), True).findings == []
    third = watch.after_tool("vault_write", broken(), True)
    assert [f.pattern for f in third.findings] == ["repeated_tool_error"]
    assert third.findings[0].tool == "vault_write"
    assert third.hints and all(h.startswith("[vaultbot]") for h in third.hints)
    assert watch.after_tool("vault_write", broken(), True).findings == []  # already reported


def test_identical_results_three_times_is_no_progress() -> None:
    watch = RunWatch(max_tool_calls=50)
    watch.after_tool("vault_search", {"success": True, "results": []}, False)
    watch.after_tool("vault_list", {"success": True, "results": []}, False)
    verdict = watch.after_tool("vault_search", {"success": True, "results": []}, False)
    assert [f.pattern for f in verdict.findings] == ["no_progress"]


def test_one_call_before_the_cap_is_reported() -> None:
    watch = RunWatch(max_tool_calls=3)
    watch.after_tool("vault_read", {"success": True, "n": 1}, False)
    verdict = watch.after_tool("vault_read", {"success": True, "n": 2}, False)
    assert [f.pattern for f in verdict.findings] == ["cap_approaching"]


def test_three_policy_refusals_are_a_rejection_loop() -> None:
    watch = RunWatch(max_tool_calls=50)
    watch.after_tool("vault_read", broken("path_not_allowed"), True)
    watch.after_tool("vault_write", broken("path_not_allowed"), True)
    verdict = watch.after_tool("vault_list", broken("path_not_allowed"), True)
    assert "rejection_loop" in [f.pattern for f in verdict.findings]
    assert any("permanent" in h for h in verdict.hints)


def test_a_signature_escalates_after_three_attempts_and_two_escalations_end_the_run() -> None:
    watch = RunWatch(max_tool_calls=50)
    verdicts = [watch.after_tool("vault_write", broken(), True) for _ in range(3)]
    assert [v.escalation is not None for v in verdicts] == [False, False, True]
    assert verdicts[2].escalation and verdicts[2].escalation.signature == "vault_write:storage_error"
    assert verdicts[2].end_run is None
    for _ in range(2):
        watch.after_tool("vault_search", broken("internal_error"), True)
    last = watch.after_tool("vault_search", broken("internal_error"), True)
    assert last.escalation is not None and last.end_run == "2 different tools kept failing"


def test_a_signature_escalates_once_however_often_it_fails_again() -> None:
    watch = RunWatch(max_tool_calls=50)
    verdicts = [watch.after_tool("vault_write", broken(), True) for _ in range(6)]
    assert [v.escalation is not None for v in verdicts] == [False, False, True, False, False, False]
    assert all(v.end_run is None for v in verdicts) and watch.escalations == 1


# Inside a run: the real dispatcher over a real vault in tmp_path, with disk faults injected


@pytest.fixture
async def app(make_app: Callable[..., Awaitable[App]]) -> App:
    return await make_app()


async def run(app: App, model: ScriptedModel, limits: Limits | None = None) -> tuple[Any, Steps]:
    steps = Steps()
    context = ToolContext(conversation="c", channel="terminal", recipient="ann", run_id="r", inbound_id="in-1")
    result = await run_turn(
        model=model,
        dispatcher=build_dispatcher(app.notes, app.bus, app.store),
        system="s",
        history=[],
        text="go",
        context=context,
        recorder=steps,
        limits=limits or Limits(),
    )
    return result, steps


async def sent(app: App) -> list[str]:
    return [m.text for m in await outbox(app) if m.kind == "reply"]


WRITE = ("vault_write", {"folder": "Inbox", "title": "Milk", "content": "oat"})


async def test_a_failure_injected_once_is_retried_by_the_model_and_the_run_completes(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = DiskFaults(monkeypatch, times=1)
    model = ScriptedModel()
    model.enqueue(call(WRITE), call(WRITE), call(("send_message", {"text": "Saved."})), say(""))
    result, steps = await run(app, model)
    assert result.status == "completed"
    first = json.loads(model.calls[1][-1]["content"][0]["content"])
    assert first["error_type"] == "storage_error" and first["retryable"] is True
    assert len(disk.failed) == 1
    assert app.notes.read("Inbox/Milk").content.strip() == "oat"
    assert [p.name for p in (app.notes.root / "Inbox").iterdir()] == ["Milk.md"]
    assert await sent(app) == ["Saved."]
    assert steps.events == []  # one transient failure is no pattern


async def test_a_tool_that_keeps_failing_is_detected_escalated_once_and_the_loop_goes_on(
    app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    DiskFaults(monkeypatch)
    model = ScriptedModel()
    model.enqueue(
        call(WRITE),
        call(WRITE),
        *(call(("vault_write", {"folder": "Inbox", "title": f"Milk {n}", "content": "oat"})) for n in (2, 3, 4)),
        call(("send_message", {"text": "I could not save it."})),
        say(""),
    )
    result, steps = await run(app, model)
    assert result.status == "completed"  # detection informs, it does not interrupt
    types = [t for t, _, _ in steps.events]
    assert types == ["failure.detected", "run.escalated"]  # five failures of one signature: one escalation
    _, detected, notice = steps.events[0]
    assert detected["pattern"] == "repeated_tool_error" and detected["tool"] == "vault_write"
    assert detected["suggested_action"] and notice and notice.startswith("⚠")
    _, escalated, _ = steps.events[1]
    assert escalated["signature"] == "vault_write:storage_error" and escalated["attempts"] == 3
    hints = [b["text"] for b in model.calls[3][-1]["content"] if b["type"] == "text"]
    assert any("failed 3 times in a row" in h for h in hints)
    assert await sent(app) == ["I could not save it."]
    assert list(app.notes.root.rglob("*.md")) == []  # no note, not even half of one


def two_failing_tools(messages: list[dict[str, Any]]) -> Any:
    # Every write hits the broken disk; every read asks for a note that is not there.
    return call(
        ("vault_write", {"folder": "", "title": f"t{len(messages)}", "content": "x"}),
        ("vault_read", {"path": f"p{len(messages)}"}),
    )


async def test_too_many_escalations_end_the_run_as_escalated(app: App, monkeypatch: pytest.MonkeyPatch) -> None:
    DiskFaults(monkeypatch)
    result, steps = await run(app, ScriptedModel(two_failing_tools))
    assert result.status == "escalated"
    assert result.reason == "2 different tools kept failing"
    signatures = [data["signature"] for t, data, _ in steps.events if t == "run.escalated"]
    assert signatures == ["vault_write:storage_error", "vault_read:not_found"]


async def test_an_escalated_run_is_recorded_as_escalated_and_the_user_told_why(
    make_app: Callable[..., Awaitable[App]], monkeypatch: pytest.MonkeyPatch
) -> None:
    app = await make_app(ScriptedModel(two_failing_tools))
    DiskFaults(monkeypatch)
    message = InboundMessage(channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text="go")
    await app.bus.publish(INBOUND, message, conversation="terminal:ann")
    await run_inbox(app)
    [run_row] = await app.store.list_runs()
    assert (run_row["status"], run_row["reason"]) == ("escalated", "2 different tools kept failing")
    texts = [m.text for m in await outbox(app)]
    assert "I stopped here: 2 different tools kept failing." in texts
    assert await app.bus.counts(INBOUND) == {"done": 1}  # escalation ends the run, not the message


async def test_each_notice_the_user_sees_says_what_happened(app: App) -> None:
    listing = [call(("vault_list", {"folder": "", "limit": n})) for n in (1, 2, 3)]  # the same empty answer
    refused = [call(("vault_read", {"path": f"../secret{n}"})) for n in (1, 2, 3)]
    model = ScriptedModel()
    model.enqueue(*listing, *refused, call(("vault_list", {"folder": "", "limit": 4})), say("Nothing there."))
    result, steps = await run(app, model, Limits(max_tool_calls=8))

    assert result.status == "completed"
    notices = [
        "⚠ The last 3 tool calls returned the same result.",
        "⚠ vault_read failed 3 times in a row.",
        "⚠ 3 calls were refused by policy (paths outside the vault or hidden folders).",
        "⚠ vault_read keeps failing (path_not_allowed, 3 times); it needs your attention.",
        "⚠ One tool call is left before this run's limit of 8.",
    ]
    assert [notice for _, _, notice in steps.events] == notices
    # The audit trail's events say the same, with the tool and the attempts.
    assert [(t, d.get("description") or d["message"], d.get("tool")) for t, d, _ in steps.events] == [
        ("failure.detected", notices[0][2:], "vault_list"),
        ("failure.detected", notices[1][2:], "vault_read"),
        ("failure.detected", notices[2][2:], None),
        ("run.escalated", notices[3][2:], None),
        ("failure.detected", notices[4][2:], None),
    ]
    assert steps.events[3][1] == {"signature": "vault_read:path_not_allowed", "attempts": 3, "message": notices[3][2:]}
    # The model reads each pattern with what to do about it, after the results of the call that showed it.
    told = [b["text"] for m in model.calls[1:] for b in m[-1]["content"] if b["type"] == "text"]
    for notice, advice in [
        (notices[0], "Repeating them will not help; answer with what you have."),
        (notices[1], "Read the error and change the input, or use another tool."),
        (notices[2], "Use vault-relative paths in ordinary folders."),
        (notices[4], "Finish now: reply to the user with what you have."),
    ]:
        assert f"[vaultbot] {notice[2:]} {advice}" in told
