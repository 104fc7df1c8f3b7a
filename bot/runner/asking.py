"""Asking the person before a risky call, and what their answer (or its absence) does to the run.

A run that stops to ask (``RunResult.status == "waiting"``) is suspended in one transaction: its
round so far, the question (``bot.consent.Questions``), the question in the outbox, a timeout on the
bus, the run marked ``waiting`` and its message acked. No worker waits: the answer is a new message
on the bus, handled like any other.

- ``Allow`` or ``Deny`` goes on with the run (:class:`~bot.runner.handler.TurnHandler` resumes it,
  calling the model with the call's result or the refusal);
- the timeout, or a new message from the person, declines it without a model call: the run's turn is
  closed with the refusal in it, so the model reads it with the next message.

Whichever comes first decides; the others are told it was decided.
"""

from __future__ import annotations

import logging
import secrets
import time
from typing import Any

from bot.bus import (
    CONSENT,
    Answer,
    Bus,
    Decision,
    Delivery,
    InboundMessage,
    OutboundMessage,
    Publication,
    Sender,
    outbound_topic,
)
from bot.consent import Question, Questions, Waiting
from bot.db import Database
from bot.runner.closing import NOT_RUN, closed, ending_note
from bot.runner.history import compact, estimate_tokens
from bot.runner.loop import tool_result
from bot.store import Store
from bot.tools import Dispatcher, ToolContext, ToolOutcome, failure

log = logging.getLogger(__name__)

# What the buttons of a question become once it is decided, by how it was decided.
SHOWN = {
    "allowed": "✅ Allowed",
    "denied": "✋ Denied",
    "expired": "⌛ Not answered in time: declined",
    "declined": "↪ Declined: you sent a new message",
}
WHY = {
    "denied": "the person tapped Deny",
    "expired": "the person did not answer in time",
    "declined": "the person sent a new message instead of answering",
}


def refusal(decision: str) -> dict[str, Any]:
    """The tool result the model gets for a call the person did not allow."""
    return failure(
        f"Not run: the person did not allow this call ({WHY[decision]}). Do not try to do it another way; "
        "say that you did not do it.",
        "declined",
    )


# The allowed call's result when a process stopped while making it.
INTERRUPTED = failure(
    "Interrupted: vaultbot stopped while this call was being made, so it may or may not have "
    "happened. It is not made again; tell the person.",
    "interrupted",
)
# The allowed call's result when the run could not go on before making it.
NOT_MADE = failure("Not made: vaultbot could not go on after the person allowed this call.", "not_run")


def context_of(question: Question) -> ToolContext:
    """The context of the run a question stopped, as it stood."""
    waiting = question.waiting
    return ToolContext(
        conversation=question.conversation,
        channel=waiting.channel,
        recipient=waiting.recipient,
        run_id=question.run_id,
        inbound_id=waiting.inbound_id,
        person=waiting.person,
        sent=waiting.sent,
        scheduled=waiting.scheduled,
        read=set(waiting.read),
        sources=frozenset(waiting.sources),
        own=waiting.own,
    )


class Asking:
    """Suspends runs that must ask, and settles questions; the runner's side of ``bot.consent``."""

    def __init__(self, *, db: Database, bus: Bus, store: Store, questions: Questions, timeout: float) -> None:
        self._db = db
        self._bus = bus
        self._store = store
        self.questions = questions
        self._timeout = timeout

    def suspending(self, context: ToolContext, waiting: Waiting, question: str) -> list[Any]:
        """The writes that suspend a run before the call ``waiting.calls[0]``: for the caller's finishing
        transaction, beside the run's held steps and the ack of its message."""
        call = waiting.calls[0]
        question_id = secrets.token_hex(8)
        asked = OutboundMessage(
            channel=context.channel,
            conversation=context.conversation,
            recipient=context.recipient,
            text=question,
            in_reply_to=context.inbound_id,
            kind="notice",
            question=question_id,
        )
        expiry = InboundMessage(
            channel=context.channel,
            conversation=f"consent:{question_id}",
            sender=Sender(id="vaultbot"),
            text="",
            answer=Answer(question=question_id, choice="expire"),
        )
        log.info("? run %s asks before %s (question %s)", context.run_id, call["name"], question_id)
        return [
            self.questions.ask(
                id=question_id,
                run_id=context.run_id,
                conversation=context.conversation,
                tool=call["name"],
                input=call.get("input"),
                question=question,
                waiting=waiting,
                timeout=self._timeout,
            ),
            self._bus.put(
                Publication(outbound_topic(context.channel), asked, context.conversation, f"question:{question_id}")
            ),
            self._bus.put(
                Publication(CONSENT, expiry, expiry.conversation, f"question-expiry:{question_id}", self._timeout)
            ),
            self._store.mark_run(context.run_id, "waiting", f"waiting for the person's answer: {call['name']}"),
            self._store.add_step(
                context.run_id,
                kind="event",
                name="consent",
                input={"tool": call["name"], "question": question, "id": question_id},
                output={"state": "asked"},
                is_error=False,
                duration_ms=0.0,
            ),
        ]

    async def decide(self, delivery: Delivery, message: InboundMessage) -> Question | None:
        """Take an answer (or a timeout): the question it decides, to be gone on with (``allowed``,
        ``denied``) or already closed (``expired``); None when it was decided before (a second tap is
        told so) or is unknown."""
        answer = message.answer
        assert answer is not None
        decision = {"allow": "allowed", "deny": "denied", "expire": "expired"}[answer.choice]
        tap = message.tap
        by = "timeout" if decision == "expired" else "the person"
        if decision != "expired" and not await self._answerable(answer.question, message):
            return None
        async with self._db.transaction():
            decided = await self.questions.decide(answer.question, decision, by=by, message=delivery.id)
            if decided is None:
                known = await self.questions.get(answer.question)
                if decision != "expired" and known is not None and message.conversation == known.conversation:
                    said = f"Already decided: {SHOWN.get(known.state, known.state)}."
                    await self._tell(known, said, tap=tap, key=f"{delivery.id}:again")
                return None
            question, fresh = decided
            if decision == "expired":
                if fresh:
                    await self._close(question, "expired")
                return question
            if fresh:
                await self._record(question, decision, by)
                await self._tell(question, SHOWN[decision], tap=tap, key=f"decision:{question.id}")
        return question

    async def _answerable(self, question_id: str, message: InboundMessage) -> bool:
        """Whether ``message`` may answer the question: only the person of its conversation may (another
        allowed user's forged answer, or a tap in a group by someone else, decides nothing)."""
        question = await self.questions.get(question_id)
        if question is None:
            return False
        person = question.waiting.person
        if message.conversation == question.conversation and (not person or message.sender.id == person):
            return True
        log.warning(
            "! answer to question %s refused: from %s in %s, not the person asked",
            question_id,
            message.sender.id,
            message.conversation,
        )
        return False

    async def outcome(self, question: Question, context: ToolContext, dispatcher: Dispatcher) -> ToolOutcome:
        """What the call a question was about comes to once decided: the person's refusal, or the call
        made, once. A run resumed again reuses its result, and one cut off while the call was being made
        is told so rather than make it again."""
        if question.state != "allowed":
            return ToolOutcome(refusal(question.state), is_error=True)
        known = await self.questions.start_call(question.id)
        if known is not None and known.get("calling"):
            return ToolOutcome(INTERRUPTED, is_error=True)
        if known is not None:
            return ToolOutcome(known["result"], known["is_error"], untrusted=known.get("untrusted"))
        call = question.asked_call
        started = time.perf_counter()
        outcome = await dispatcher.call(call["name"], call.get("input"), context)
        kept = {"result": outcome.result, "is_error": outcome.is_error, "untrusted": outcome.untrusted}
        await self.questions.record_outcome(question.id, kept)
        await self._store.add_step(
            context.run_id,
            kind="tool",
            name=call["name"],
            input=call.get("input"),
            output=outcome.result,
            is_error=outcome.is_error,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
        return outcome

    async def decline_open(self, conversation: str) -> None:
        """Decline the questions ``conversation`` still waits on: the person sent a new message instead."""
        for open_question in await self.questions.open_in(conversation):
            async with self._db.transaction():
                decided = await self.questions.decide(open_question.id, "declined", by="a new message", message=None)
                if decided is not None:
                    await self._close(decided[0], "declined")

    async def _close(self, question: Question, decision: str) -> None:
        """End a suspended run without going on: its turn, with the refusal where the call's result
        would be, goes into the conversation's history (where the model reads it with the next message)."""
        why = WHY[decision]
        await self._keep_turn(question, refusal(decision), True, ending_note(f"{why}: not asked again"))
        await self._record(question, decision, "timeout" if decision == "expired" else "a new message")
        await self._end_run(question, "stopped", f"{question.tool} was not run: {why}")
        await self._tell(question, SHOWN[decision], tap=None, key=f"decision:{question.id}")

    async def give_up(self, question_id: str, told: str) -> None:
        """After an answer could not be handled (it was dead-lettered): the run it went on with ends
        failed, its turn goes into history with what became of the asked call, the log says so and the
        person is told, once. An answer that decided nothing leaves its question open (to its timeout
        or a new message), and the person is asked to answer again."""
        question = await self.questions.get(question_id)
        if question is None or question.state in ("expired", "declined"):  # its run was closed then
            return
        if question.state == "asked":
            again = (
                f"I could not take your answer: {told}. The question is still open: answer it again, "
                "or send a new message."
            )
            await self._tell(question, again, tap=None, key=f"gave-up:{question.id}", decision=False)
            return
        kept = question.outcome
        if question.state == "denied":
            result, is_error = refusal("denied"), True
        elif kept is None:
            result, is_error = NOT_MADE, True
        else:  # made, or cut off while being made
            result, is_error = kept.get("result", INTERRUPTED), kept.get("is_error", True)
        async with self._db.transaction():
            if not await self._keep_turn(question, result, is_error, ending_note(f"not answered: {told}")):
                return  # given up on before a crash
            await self._end_run(
                question, "failed", f"not answered after the person's answer ({question.state}): {told}"
            )
            await self._store.add_interaction(
                conversation=question.conversation,
                category="error",
                summary=f"Could not go on after the person {question.state} {question.tool}: {told}",
                run_id=question.run_id,
            )
            said = f"I could not go on after your answer ({question.tool}): {told}."
            await self._tell(question, said, tap=None, key=f"gave-up:{question.id}", decision=False)

    async def _end_run(self, question: Question, status: str, reason: str) -> None:
        """End the run ``question`` stopped, with what it had used and called by then."""
        waiting = question.waiting
        await self._store.finish_run(
            question.run_id,
            status=status,
            reason=reason,
            usage=waiting.usage,
            tools_called=waiting.tools_called,
            final_text=None,
        )

    async def _keep_turn(self, question: Question, result: dict[str, Any], is_error: bool, ending: str) -> bool:
        """Put the stopped run's turn into history, closed with ``ending``: ``result`` where the asked
        call's result goes, and the calls after it not run. False when it was there already."""
        waiting = question.waiting
        asked, *rest = waiting.calls
        results = [*waiting.results, tool_result(asked["id"], result, is_error)]
        results += [tool_result(call["id"], failure(NOT_RUN, "not_run"), True) for call in rest]
        turn = compact(closed([*waiting.turn, {"role": "user", "content": results}], ending))
        return await self._store.append_turn(
            question.conversation, waiting.inbound_id, turn, tokens=estimate_tokens(turn)
        )

    async def _record(self, question: Question, decision: str, by: str) -> None:
        """Keep the decision in the run's audit trail, where the review page shows it."""
        await self._store.add_step(
            question.run_id,
            kind="event",
            name="consent",
            input={"tool": question.tool, "id": question.id},
            output={"state": decision, "by": by},
            is_error=False,
            duration_ms=0.0,
        )

    async def _tell(self, question: Question, text: str, *, tap: str | None, key: str, decision: bool = True) -> None:
        """Show what became of ``question`` where it was asked (once per ``key``): as its decision (in
        place of its buttons), or as a message of its own."""
        waiting = question.waiting
        shown = OutboundMessage(
            channel=waiting.channel,
            conversation=question.conversation,
            recipient=waiting.recipient,
            text=f"{text} ({question.tool})." if decision else text,
            in_reply_to=waiting.inbound_id,
            kind="notice",
            decision=Decision(question=question.id, text=text, tap=tap) if decision else None,
        )
        await self._bus.put(Publication(outbound_topic(waiting.channel), shown, question.conversation, key))
