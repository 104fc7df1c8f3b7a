"""The stateless model ↔ tools loop: everything it needs is passed in, everything it does is
returned, recorded through the recorder, or published by the tools."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from bot.consent import LABELS_NOTE, Policy, Taint, Untrusted, Waiting, label, own_words, question_for, taint_of
from bot.images import without_pixels
from bot.runner.caching import with_breakpoints
from bot.runner.closing import closed, ending_note
from bot.runner.guards import CallGuard, truncate_middle
from bot.runner.model import ModelClient, ModelReply, TextListener, Usage
from bot.runner.watch import RunWatch, Verdict
from bot.tools import TELLING, Checked, Dispatcher, ToolContext, ToolOutcome, failure

log = logging.getLogger(__name__)

# Built once (json.dumps with options builds a new encoder on every call).
_encode = json.JSONEncoder(ensure_ascii=False).encode


class StepRecorder(Protocol):
    """Where the loop writes its audit trail, one step per model call or tool call."""

    async def step(
        self,
        *,
        kind: str,
        name: str,
        input: Any,
        output: Any,
        is_error: bool,
        duration_ms: float,
        usage: dict[str, int] | None = None,
    ) -> None:
        """Record one step."""
        ...

    async def event(self, type: str, data: dict[str, Any], *, notice: str | None = None) -> None:
        """Publish something that happened in the run (``failure.detected``, ``run.escalated``);
        ``notice`` is the one line a channel shows the user, if any."""
        ...

    async def flush(self) -> None:
        """Write the steps recorded so far, if the recorder held them to write together: called at the
        end of each round (a model call and its tools) after which the run goes on or stops. The round
        with the final reply is left held: the caller writes it with the run's end, in one transaction."""
        ...


@dataclass
class RunResult:
    """How a run ended. ``messages`` is the turn to append to the conversation's history, closed."""

    status: str  # "completed", "stopped" (by a guard), "escalated" (tools kept failing) or "waiting"
    final_text: str
    messages: list[dict[str, Any]]
    tools_called: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    reason: str | None = None
    # Status "waiting": the run stopped before a call the person must allow (``question``), as it stood.
    waiting: Waiting | None = None
    question: str | None = None

    @property
    def success(self) -> bool:
        """True when the model finished its turn on its own."""
        return self.status == "completed"


def system_prompt(system: str, zone: str | None, profile: str | None = None) -> list[dict[str, Any]]:
    """The system blocks: the configured prompt, what the labels on someone else's words mean
    (``bot.consent``), how the user's time reaches the model, then the profile (what the assistant
    knows about its person, ``bot.memory``).

    Nothing here changes with the time, so the cached prefix (tools, prompt, conversation) holds
    for as long as the cache does. The time itself comes with each user message (``bot.clock.stamped``):
    the newest one says what time it is now, to the minute. The profile changes only when its note
    does, and comes last, so the breakpoint after it caches it with the rest.
    """
    blocks: list[dict[str, Any]] = [{"type": "text", "text": system}, {"type": "text", "text": LABELS_NOTE}]
    if zone is not None:
        blocks.append({"type": "text", "text": time_note(zone)})
    if profile is not None:
        blocks.append({"type": "text", "text": profile})
    blocks[-1] = {**blocks[-1], "cache_control": {"type": "ephemeral"}}
    return blocks


def time_note(zone: str) -> str:
    """What the model is told about the user's time zone and the stamps on their messages."""
    return (
        f"The user's time zone is {zone}. Each user message starts with the local date and time it was "
        "sent, such as [Mon 2026-11-23 14:05 +01:00], so the newest message tells you the current time. "
        'Read "today", "tomorrow at 9" and "in 10 minutes" from it; times without an offset in '
        "schedule_message are read in the user's zone. vaultbot adds the stamp, the user did not type it: "
        "never repeat it in a reply, and leave it out of notes."
    )


@dataclass(frozen=True)
class Limits:
    """Per-run limits, from settings."""

    max_tool_calls: int = 20


@dataclass(frozen=True)
class Resumed:
    """A run taken up again once the person decided (``bot.consent``): how it stood, and the asked
    call's outcome (its result if allowed and made, the person's refusal otherwise)."""

    waiting: Waiting
    outcome: ToolOutcome
    made: bool  # the call was made (allowed), not refused


async def run_turn(
    *,
    model: ModelClient,
    dispatcher: Dispatcher,
    system: str,
    history: list[dict[str, Any]],
    text: str,
    context: ToolContext,
    recorder: StepRecorder,
    limits: Limits = Limits(),
    zone: str | None = None,
    listener: TextListener | None = None,
    images: Sequence[dict[str, Any]] = (),
    profile: str | None = None,
    policy: Policy | None = None,
    resumed: Resumed | None = None,
) -> RunResult:
    """Answer one user message: call the model, run the tools it asks for, until it ends its turn.

    ``listener`` hears every model call's text as it is written (progress a channel may show);
    ``images`` (content blocks) go before ``text`` in the user's message; ``profile`` is the system
    prompt's part about the person (``bot.memory``).

    With ``policy``, a call that needs the person's consent (``bot.consent.question_for``) is not made:
    the run ends ``waiting``, with the question and the run as it stood, and ``resumed`` later goes on
    from there with the call's outcome (``text`` and ``images`` are then unused).

    Model errors (``ModelUnavailable``, ``ModelRejected``) propagate to the caller, which owns
    retries; tool failures never do. However the run ends, ``messages`` is a closed turn
    (``bot.runner.closing``).
    """
    guard = CallGuard(limits.max_tool_calls)
    turn, result, round_ = _begin(text, images, resumed, guard)
    taint = taint_of(history, kept=True).seeing(turn).offered(dispatcher.sources())
    if profile is not None:  # the profile note holds labelled words when a tainted run wrote them there
        taint = taint.seeing([{"role": "system", "content": profile}])
    _holding(context, taint, [*history, *turn])
    run = _Run(
        model=model,
        dispatcher=dispatcher,
        context=context,
        recorder=recorder,
        policy=policy,
        listener=listener,
        history=history,
        turn=turn,
        result=result,
        guard=guard,
        watch=RunWatch(limits.max_tool_calls),
        taint=taint,
    )
    return await run.loop(system_prompt(system, zone, profile), round_)


def _begin(
    text: str, images: Sequence[dict[str, Any]], resumed: Resumed | None, guard: CallGuard
) -> tuple[list[dict[str, Any]], RunResult, _Round]:
    """A run's turn, result and first round: a new turn with the user's message, whose model is called
    first, or a ``resumed`` one as it stood, its asked call's outcome added to its round."""
    if resumed is None:
        content: str | list[dict[str, Any]] = [*images, {"type": "text", "text": text}] if images else text
        turn: list[dict[str, Any]] = [{"role": "user", "content": content}]
        return turn, RunResult(status="completed", final_text="", messages=turn), _Round(done=True)
    waiting = resumed.waiting
    turn = waiting.turn
    result = RunResult("completed", "", turn, list(waiting.tools_called), Usage(**waiting.usage))
    guard.calls, recent = waiting.guard
    guard.recent.extend(recent)
    asked, *rest = waiting.calls
    round_ = _Round(rest, list(waiting.results), list(waiting.hints), waiting.failed)
    round_.add(asked, resumed.outcome)
    if resumed.made:
        result.tools_called.append(asked["name"])
    return turn, result, round_


@dataclass
class _Run:
    """A run as its loop goes on: what it was given, its turn and result so far, and what it holds."""

    model: ModelClient
    dispatcher: Dispatcher
    context: ToolContext
    recorder: StepRecorder
    policy: Policy | None
    listener: TextListener | None
    history: list[dict[str, Any]]
    turn: list[dict[str, Any]]
    result: RunResult
    guard: CallGuard
    watch: RunWatch
    taint: Taint

    async def loop(self, system: list[dict[str, Any]], round_: _Round) -> RunResult:
        """Call the model and make the calls it asks for, round after round, from ``round_``."""
        tools = self.dispatcher.definitions()
        result, turn = self.result, self.turn
        previous_end = len(self.history) - 1  # where the prompt cached by the previous call ends
        while True:
            if round_.done:
                messages = [*self.history, *turn]
                reply = await _call_model(
                    self.model, system, messages, previous_end, tools, self.recorder, self.listener
                )
                previous_end = len(messages) - 1
                result.usage.add(reply.usage)
                turn.append({"role": "assistant", "content": reply.content})
                if reply.stop_reason != "tool_use" or not reply.tool_uses:
                    result.final_text = reply.text
                    cut = "the reply reached the output token limit" if reply.stop_reason == "max_tokens" else None
                    result.messages = closed(turn, ending_note(cut) if cut else "(Done.)")
                    return result  # the last round's steps are the caller's to write, with the run's end
                round_ = _Round(list(reply.tool_uses))
            while round_.calls:
                if await self._make(round_.calls.pop(0), round_):
                    return result
            await self.recorder.flush()
            # Hints follow the tool results in the same message, where the model reads them next.
            turn.append({"role": "user", "content": round_.message()})
            round_.done = True
            if result.reason:
                log.warning("! run %s %s: %s", self.context.run_id, result.status, result.reason)
                result.messages = closed(turn, ending_note(result.reason))
                return result

    async def _make(self, call: dict[str, Any], round_: _Round) -> bool:
        """Make one call the model asked for (or refuse it, or hold it); True when the run must stop to
        ask the person first (status ``waiting``)."""
        result = self.result
        stop = result.reason or self.guard.admit(call["name"], call.get("input"))
        if stop:
            if result.status == "completed":
                result.status, result.reason = "stopped", stop
            round_.results.append(tool_result(call["id"], failure(f"Not run: {stop}.", "guard_stopped"), True))
            return False
        if round_.failed is not None and call["name"] in TELLING:
            # Never "saved" in the log or to the user after a save that failed: the model reads the
            # failure first, and tells what happened in its next response.
            held = await _hold(call, round_.failed, self.recorder)
            round_.results.append(tool_result(call["id"], held, is_error=True))
            return False
        checked = self.dispatcher.check(call["name"], call.get("input"))
        question = None
        if self.policy is not None and self.taint.tainted and isinstance(checked, Checked):
            question = question_for(call["name"], checked.input.model_dump(), self.taint, self.policy)
        if question is not None:
            result.status, result.question = "waiting", question
            result.waiting = round_.waiting(call, self.turn, result, self.guard, self.context)
            return True
        result.tools_called.append(call["name"])
        outcome = await _call_tool(self.dispatcher, checked, call, self.context, self.recorder)
        block = round_.add(call, outcome)
        if outcome.untrusted is not None:  # its label is in the run now
            self.taint = self.taint.seeing([{"role": "user", "content": [block]}])
            _holding(self.context, self.taint, [*self.history, *self.turn])
        verdict = self.watch.after_tool(call["name"], outcome.result, outcome.is_error)
        round_.hints += verdict.hints
        await _report(verdict, self.recorder)
        if verdict.end_run:
            result.status, result.reason = "escalated", verdict.end_run
        return False


def _holding(context: ToolContext, taint: Taint, messages: list[dict[str, Any]]) -> None:
    """Tell the tools what the run holds: the person's addresses, and once it is tainted its sources and
    the person's own words, which what it writes keeps and leaves out (``bot.consent.provenance``)."""
    context.addresses = taint.addresses
    if taint.sources != context.sources:
        context.sources = taint.sources
        context.own = own_words(messages)


@dataclass
class _Round:
    """The tool calls of one model response: those left to make, the results so far, the hints for the
    model, and the first call that failed."""

    calls: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    failed: str | None = None
    done: bool = False  # its results are in the turn: the model is called next

    def add(self, call: dict[str, Any], outcome: ToolOutcome) -> dict[str, Any]:
        """Keep a call's outcome as the tool_result the model reads; returns that block."""
        if outcome.is_error and self.failed is None:
            self.failed = call["name"]
        block = tool_result(
            call["id"], outcome.result, is_error=outcome.is_error, blocks=outcome.blocks, untrusted=outcome.untrusted
        )
        self.results.append(block)
        return block

    def message(self) -> list[dict[str, Any]]:
        return self.results + [{"type": "text", "text": hint} for hint in self.hints]

    def waiting(
        self,
        asked: dict[str, Any],
        turn: list[dict[str, Any]],
        result: RunResult,
        guard: CallGuard,
        context: ToolContext,
    ) -> Waiting:
        """The run as it stands before ``asked``, to be taken up again once the person decides."""
        return Waiting(
            turn=[{**m, "content": without_pixels(m["content"])} for m in turn],
            results=self.results,
            calls=[asked, *self.calls],
            hints=self.hints,
            failed=self.failed,
            usage=result.usage.as_dict(),
            tools_called=result.tools_called,
            guard=(guard.calls, list(guard.recent)),
            channel=context.channel,
            recipient=context.recipient,
            inbound_id=context.inbound_id,
            person=context.person,
            sent=context.sent,
            scheduled=context.scheduled,
            read=sorted(context.read),
            sources=sorted(context.sources),
            own=context.own,
        )


async def _report(verdict: Verdict, recorder: StepRecorder) -> None:
    for finding in verdict.findings:
        await recorder.event("failure.detected", finding.as_event(), notice=f"⚠ {finding.description}")
    if verdict.escalation is not None:
        escalation = verdict.escalation
        await recorder.event(
            "run.escalated",
            {"signature": escalation.signature, "attempts": escalation.attempts, "message": escalation.message},
            notice=f"⚠ {escalation.message}",
        )


async def _call_model(
    model: ModelClient,
    system: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    previous_end: int,
    tools: list[dict[str, Any]],
    recorder: StepRecorder,
    listener: TextListener | None,
) -> ModelReply:
    started = time.perf_counter()
    marked = with_breakpoints(messages, previous_end)
    reply = await model.complete(system=system, messages=marked, tools=tools, listener=listener)
    await recorder.step(
        kind="model",
        name=reply.model or model.name,
        # The whole conversation would make the trail quadratic; the new message is what changed
        # (its images named, not kept: the vault has them).
        input={"messages": len(messages), "last": {**messages[-1], "content": without_pixels(messages[-1]["content"])}},
        output={"stop_reason": reply.stop_reason, "content": reply.content},
        is_error=False,
        duration_ms=(time.perf_counter() - started) * 1000,
        usage=reply.usage.as_dict(),
    )
    return reply


async def _call_tool(
    dispatcher: Dispatcher,
    checked: Checked | ToolOutcome,
    call: dict[str, Any],
    context: ToolContext,
    recorder: StepRecorder,
) -> ToolOutcome:
    started = time.perf_counter()
    outcome = checked if isinstance(checked, ToolOutcome) else await dispatcher.run(checked, context)
    duration_ms = (time.perf_counter() - started) * 1000
    await recorder.step(
        kind="tool",
        name=call["name"],
        input=call.get("input"),
        output=outcome.result,
        is_error=outcome.is_error,
        duration_ms=duration_ms,
    )
    log.debug("tool %s %.1fms error=%s run=%s", call["name"], duration_ms, outcome.is_error, context.run_id)
    return outcome


async def _hold(call: dict[str, Any], failed: str, recorder: StepRecorder) -> dict[str, Any]:
    """The result of a call to a ``TELLING`` tool asked for after ``failed`` failed in the same
    response: not run, and kept in the trail as not run."""
    held = failure(
        f"Not run: {failed} failed earlier in this response, so this may not be true. "
        f"Read {failed}'s result, then say what happened.",
        "held_after_failure",
    )
    await recorder.step(
        kind="tool", name=call["name"], input=call.get("input"), output=held, is_error=True, duration_ms=0.0
    )
    return held


def tool_result(
    tool_use_id: str,
    result: dict[str, Any],
    is_error: bool,
    *,
    blocks: tuple[dict[str, Any], ...] = (),
    untrusted: str | None = None,
) -> dict[str, Any]:
    """The tool_result block the model reads for a call's ``result``: long results cut in the middle,
    someone else's words (``untrusted``: where they came from) inside their label."""
    text = truncate_middle(_encode(result))
    if untrusted is not None:
        text = label(Untrusted(text, untrusted))
    content: str | list[dict[str, Any]] = [{"type": "text", "text": text}, *blocks] if blocks else text
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block
