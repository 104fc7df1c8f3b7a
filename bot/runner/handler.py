"""The inbound worker's handler: one inbound message → one run → replies, history, audit trail.

Idempotent across crashes: replies are keyed by (inbound message, sequence) in the outbox, the
turn is appended to history once per inbound message, and the finishing writes (reply, history,
run record, ack) are one transaction, so a crash before it re-runs the message and a crash after
it finds the message done. A recording's transcript is kept once obtained, so a re-run reuses it.
"""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any, NoReturn

from bot.bus import ACKED, Bus, Delivery, DraftWriter, Event, Fatal, InboundMessage, Progress, Retry, events_topic
from bot.clock import Clock, stamped, zone_name
from bot.db import Database
from bot.runner.budget import DailyBudget
from bot.runner.commands import CommandRunner, parse_command
from bot.runner.drafting import ReplyDraft
from bot.runner.errors import ModelError, ModelRejected, ModelUnavailable
from bot.runner.history import compact, estimate_json_tokens, estimate_tokens, fit
from bot.runner.loop import Limits, RunResult, run_turn
from bot.runner.model import ModelClient, Usage
from bot.runner.pricing import PriceTable
from bot.runner.summary import AuditSummarizer
from bot.store import CallUsage, Store, encode_turn
from bot.tools import Dispatcher, ToolContext, notice, queue_notice, reply
from bot.transcribe import VoiceNotes

log = logging.getLogger(__name__)

UNREACHABLE = "I can't reach the model right now. Your message is safe; I'll answer as soon as it's back."
APOLOGY = "Sorry, I could not handle your message after {attempts} attempts ({error}). It is kept in the log."


class DeadLetter(Fatal):
    """Retrying this message cannot help; the worker dead-letters it at once."""


@dataclass(frozen=True)
class _Meter:
    """Prices a model call's usage and stamps it with the user's clock."""

    prices: PriceTable
    clock: Clock

    def __call__(self, model: str, api_model: str, usage: Usage) -> CallUsage:
        """``model`` is the name sent to the API, ``api_model`` the one it answered with."""
        return CallUsage(
            at=self.clock.now(),
            model=model,
            api_model=api_model,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_input_tokens,
            cache_write_tokens=usage.cache_creation_input_tokens,
            cost_usd=self.prices.cost(usage, api_model, model),
        )


@dataclass
class _Recorder:
    """Writes a run's steps to the store and its events to the bus (the loop's ``StepRecorder``)."""

    store: Store
    bus: Bus
    context: ToolContext
    summarizer: AuditSummarizer | None = None
    # Set when the run calls a priced model (named ``model`` in requests): each model step then
    # records its tokens and cost.
    meter: _Meter | None = None
    model: str = ""

    async def step(self, **fields: Any) -> None:
        summary = await self.summarizer.summarize(fields["output"]) if self.summarizer else None
        call = None
        if fields["kind"] == "model" and self.meter is not None:
            call = self.meter(self.model, fields["name"], Usage(**(fields.get("usage") or {})))
        text = summary.text if summary else None
        await self.store.add_step(self.context.run_id, summary=text, call=call, **fields)
        if summary is not None and self.meter is not None:
            await self.store.record_usage(
                self.context.run_id, self.meter(summary.model, summary.api_model, summary.usage)
            )

    async def event(self, type: str, data: dict[str, Any], *, notice: str | None = None) -> None:
        context = self.context
        await self.store.add_step(
            context.run_id, kind="event", name=type, input={}, output=data, is_error=False, duration_ms=0.0
        )
        event = Event(
            type=type,
            conversation=context.conversation,
            recipient=context.recipient,
            run_id=context.run_id,
            data=data,
            notice=notice,
        )
        # Keyed by what happened, not by run: a re-run after a crash does not tell the user twice.
        what = data.get("pattern") or data.get("signature") or data.get("attempt") or ""
        await self.bus.publish(
            events_topic(context.channel),
            event,
            conversation=context.conversation,
            dedupe_key=f"{context.inbound_id}:{type}:{what}:{data.get('tool') or ''}",
        )


class TurnHandler:
    """Handles deliveries from the inbound topic."""

    def __init__(
        self,
        *,
        db: Database,
        bus: Bus,
        store: Store,
        dispatcher: Dispatcher,
        model: ModelClient,
        system: str,
        limits: Limits,
        history_turns: int,
        history_tokens: int,
        max_attempts: int,
        mode: str,
        commands: CommandRunner,
        prices: PriceTable,
        clock: Clock,
        summarizer: AuditSummarizer | None = None,
        budget: DailyBudget | None = None,
        over_budget: ModelClient | None = None,
        voice: VoiceNotes | None = None,
        progress: Progress | None = None,
    ) -> None:
        """``over_budget`` files messages (capture mode) once ``budget`` is spent for the day;
        ``voice`` transcribes the recordings that come with messages; ``progress`` receives the
        reply's text as it is written, for channels that show it."""
        self._db = db
        self._bus = bus
        self._store = store
        self._dispatcher = dispatcher
        self._model = model
        self._system = system
        self._limits = limits
        self._history_turns = history_turns
        self._history_tokens = history_tokens
        self._max_attempts = max_attempts
        self._mode = mode
        self._commands = commands
        self._summarizer = summarizer
        self._prices = prices
        self._clock = clock
        self._budget = budget
        self._over_budget = over_budget
        self._voice = voice
        self._progress = progress

    async def __call__(self, delivery: Delivery) -> bool:
        """Run the model (or a slash command) on one inbound message and finish it atomically."""
        message = delivery.parse(InboundMessage)
        context = _context(message, run_id=uuid.uuid4().hex)
        started = time.perf_counter()
        command = parse_command(message.text)
        model, mode = self._model, self._mode
        if command is None and self._over_budget is not None and await self._over_budget_today(context):
            model, mode = self._over_budget, "capture"
        await self._store.start_run(
            context.run_id,
            conversation=message.conversation,
            inbound_id=message.id,
            model=f"/{command.name}" if command else model.name,
            mode="command" if command else mode,
            rerun=delivery.attempts > 1,
        )
        if command is not None:
            answered = await self._commands.run(command, context)
            result = RunResult("completed", answered.reply, messages=[], tools_called=answered.tools_called)
            await self._finish(delivery, context, result)
            return ACKED
        # Off the receiving path: the channel stored the recording and moved on; a crash here re-runs.
        text = await self._voice.prepare(message, context) if self._voice else message.text
        turns = await self._store.load_history(message.conversation, self._history_turns)
        history = fit(turns, self._history_tokens, window=self._history_turns)
        meter = _Meter(self._prices, self._clock) if mode == "assistant" else None
        draft = self._open_draft(context)
        try:
            result = await run_turn(
                model=model,
                dispatcher=self._dispatcher,
                system=self._system,
                history=history,
                text=self._as_read(message, text),
                context=context,
                recorder=_Recorder(self._store, self._bus, context, self._summarizer, meter, model.name),
                limits=self._limits,
                zone=zone_name(self._clock.tz),
                listener=ReplyDraft(draft, context) if draft else None,
            )
        except ModelUnavailable as exc:
            await self._unavailable(delivery, context, exc)
        except ModelRejected as exc:
            await self._rejected(context, exc)
        finally:
            # Ended before the reply is queued: a channel never shows a draft of a reply it sent.
            if draft is not None:
                draft.end()
        await self._finish(delivery, context, result)
        log.info(
            "← %s run=%s %s %.1fms tools=%s",
            delivery.id,
            context.run_id,
            result.status,
            (time.perf_counter() - started) * 1000,
            ",".join(result.tools_called) or "-",
        )
        return ACKED

    def _open_draft(self, context: ToolContext) -> DraftWriter | None:
        if self._progress is None:
            return None
        return self._progress.open(
            key=context.inbound_id,
            channel=context.channel,
            conversation=context.conversation,
            recipient=context.recipient,
        )

    def _as_read(self, message: InboundMessage, text: str) -> str:
        """``text`` (the message's, with any transcript) as the model reads it and history keeps it:
        stamped with the local time the message was received, which a re-run after a crash or a retry
        keeps (it travels with the message)."""
        return stamped(text, message.received_at, self._clock.tz)

    async def _over_budget_today(self, context: ToolContext) -> bool:
        """True when today's budget is spent; the conversation is told once that day."""
        if self._budget is None:
            return False
        state = await self._budget.state()
        if not state.exhausted:
            return False
        await queue_notice(self._bus, context, state.notice(), key="budget-spent", once_per=state.day)
        return True

    async def _finish(self, delivery: Delivery, context: ToolContext, result: RunResult) -> None:
        kept = compact(result.messages)
        stored = encode_turn(kept)  # encoded once: for the estimate and for the row
        tokens = estimate_json_tokens(stored)
        replies = []
        # A run that never called send_message still answers, with its final text.
        if context.sent == 0 and result.final_text.strip():
            replies.append(reply(context, result.final_text))
        if result.reason:
            replies.append(notice(context, f"I stopped here: {result.reason}.", key="stopped"))
        async with self._db.transaction():
            for publication in replies:
                await self._bus.put(publication)
            if kept:  # commands leave the conversation's history alone
                await self._store.append_encoded_turn(context.conversation, context.inbound_id, stored, tokens)
            await self._store.finish_run(
                context.run_id,
                status=result.status,
                reason=result.reason,
                usage=result.usage.as_dict(),
                tools_called=result.tools_called,
                final_text=result.final_text,
            )
            await self._bus.ack(delivery.id)

    async def _unavailable(self, delivery: Delivery, context: ToolContext, exc: ModelUnavailable) -> NoReturn:
        last = delivery.attempts >= self._max_attempts
        await self._store.finish_run(
            context.run_id,
            status="dead_lettered" if last else "failed",
            reason=f"model unreachable: {exc}",
            usage={},
            tools_called=[],
            final_text=None,
        )
        # Told once per message, on the first failure, not on every retry.
        await queue_notice(self._bus, context, UNREACHABLE, key="model-unreachable")
        if not last:
            data = {"attempt": delivery.attempts, "error": str(exc), "retry_after": exc.retry_after}
            await _Recorder(self._store, self._bus, context).event("run.retrying", data)
        raise Retry(delay=exc.retry_after, reason=str(exc)) from exc

    async def _rejected(self, context: ToolContext, exc: ModelRejected) -> NoReturn:
        await self._store.finish_run(
            context.run_id, status="failed", reason=str(exc), usage={}, tools_called=[], final_text=None
        )
        await queue_notice(self._bus, context, f"I can't answer: {exc}", key="model-rejected")
        raise DeadLetter(str(exc))

    async def on_dead(self, delivery: Delivery, error: BaseException) -> None:
        """After the last attempt: apologise once, make the loss visible in the log, and close the
        message's turn in history so the next message does not read as its continuation."""
        message = delivery.parse(InboundMessage)
        context = _context(message, run_id="")
        reason = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
        # The user hears our own sentences about the model, never a raw exception's text.
        cause = error.__cause__ if isinstance(error, Retry) else error
        told = str(cause) if isinstance(cause, ModelError | DeadLetter) else "an internal error, which was logged"
        if not isinstance(error, DeadLetter):
            await queue_notice(self._bus, context, APOLOGY.format(attempts=delivery.attempts, error=told), key="dead")
        await self._store.add_interaction(
            conversation=message.conversation,
            category="error",
            summary=f"Message not handled after {delivery.attempts} attempt(s): {reason}",
            run_id=None,
        )
        if parse_command(message.text) is None:  # commands leave the conversation's history alone
            await self._close_unanswered(message, told)

    async def _close_unanswered(self, message: InboundMessage, told: str) -> None:
        unanswered = [
            {"role": "user", "content": self._as_read(message, message.text)},
            {"role": "assistant", "content": [{"type": "text", "text": f"(Not answered: {told}.)"}]},
        ]
        await self._store.append_turn(message.conversation, message.id, unanswered, tokens=estimate_tokens(unanswered))


def _context(message: InboundMessage, *, run_id: str) -> ToolContext:
    # The recipient comes from the message as the channel received it, never from the model.
    return ToolContext(
        conversation=message.conversation,
        channel=message.channel,
        recipient=message.reply_to,
        run_id=run_id,
        inbound_id=message.id,
    )
