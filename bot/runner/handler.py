"""The inbound worker's handler: one inbound message → one run → replies, history, audit trail.

Idempotent across crashes: replies are keyed by (inbound message, sequence) in the outbox, the
turn is appended to history once per inbound message, and the finishing writes (reply, history,
run record, ack) are one transaction, so a crash before it re-runs the message and a crash after
it finds the message done. A recording's transcript is kept once obtained, so a re-run reuses it.
The parts of an album (inbound messages with one ``group``) are handled as one message, by the
delivery of its first part: the other parts, still pending behind it on the bus, are acked in the
same finishing transaction, so the album's turn runs once.

A message the model could not answer after its last attempt is never only in the dead-letter queue:
:meth:`TurnHandler.on_dead` files it as capture mode does, tells the user where in one line, and logs
it with its text and the id ``vaultbot retry`` takes, once (see its docstring).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NoReturn

from bot.backoff import describe
from bot.bus import (
    ACKED,
    INBOUND,
    Bus,
    Button,
    Delivery,
    Event,
    Fatal,
    InboundMessage,
    LeaseLost,
    Retry,
    UntrustedPart,
    events_topic,
)
from bot.clock import Clock, stamped, zone_name
from bot.consent import Policy, Question, note_source
from bot.db import Database, now_iso
from bot.runner.asking import Asking, context_of
from bot.runner.budget import DailyBudget
from bot.runner.capture import CaptureModel, Filed, filed, only_link
from bot.runner.commands import Command, CommandRunner, parse_command
from bot.runner.documents import Documents
from bot.runner.drafting import ReplyDraft
from bot.runner.errors import ModelError, ModelRejected, ModelUnavailable
from bot.runner.history import compact, estimate_json_tokens, estimate_tokens, fit
from bot.runner.loop import Limits, Resumed, RunResult, run_turn
from bot.runner.model import ModelClient, Usage
from bot.runner.others import with_others
from bot.runner.photos import Photos, Seen
from bot.runner.pricing import PriceTable
from bot.runner.saved import with_where
from bot.runner.summary import AuditSummarizer
from bot.store import CallUsage, DeadLetters, Step, Store, encode_turn, retry_command
from bot.store import DeadLetter as Letter
from bot.streaming import DraftWriter, Progress
from bot.tools import Dispatcher, ToolContext, notice, queue_notice, reply
from bot.transcribe import VoiceNotes
from bot.undo import brought

log = logging.getLogger(__name__)

UNREACHABLE = "I can't reach the model right now. Your message is safe; I'll answer as soon as it's back."
APOLOGY = "Sorry, I could not handle your message after {attempts} attempts ({error})."


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
    """Writes a run's steps to the store and its events to the bus (the loop's ``StepRecorder``).

    A round's steps (the model call and the tools it asked for) are held and written together when
    the loop flushes them, at the end of the round: one statement instead of one each. An event
    writes what is held first, so the trail keeps the order things happened in."""

    store: Store
    bus: Bus
    context: ToolContext
    summarizer: AuditSummarizer | None = None
    # Set when the run calls a priced model (named ``model`` in requests): each model step then
    # records its tokens and cost.
    meter: _Meter | None = None
    model: str = ""
    held: list[Step] = field(default_factory=list)

    async def step(self, **fields: Any) -> None:
        summary = await self.summarizer.summarize(fields["output"]) if self.summarizer else None
        call = None
        if fields["kind"] == "model" and self.meter is not None:
            call = self.meter(self.model, fields["name"], Usage(**(fields.get("usage") or {})))
        self.held.append(Step(summary=summary.text if summary else None, call=call, **fields))
        if summary is not None and self.meter is not None:
            await self.store.record_usage(
                self.context.run_id, self.meter(summary.model, summary.api_model, summary.usage)
            )

    async def flush(self) -> None:
        if self.held:
            steps, self.held = self.held, []
            await self.store.add_steps(self.context.run_id, steps)

    async def event(self, type: str, data: dict[str, Any], *, notice: str | None = None) -> None:
        context = self.context
        await self.flush()
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
        documents: Documents | None = None,
        progress: Progress | None = None,
        filer: CaptureModel | None = None,
        photos: Photos | None = None,
        profile: Callable[[], Awaitable[str]] | None = None,
        asking: Asking | None = None,
        policy: Policy | None = None,
        links: ModelClient | None = None,
    ) -> None:
        """``over_budget`` files messages (capture mode) once ``budget`` is spent for the day;
        ``voice`` transcribes the recordings that come with messages; ``documents`` gives the model
        the text of the documents that do (capture mode files the message without it); ``photos`` shows
        the model the images that come with them; ``progress`` receives the
        reply's text as it is written, for channels that show it; ``filer`` files dead letters
        (default: capture mode's notes in the inbox); ``profile`` reads what the assistant knows
        about its person, before every turn the model answers (``bot.memory``); ``policy`` says which calls
        of a run holding someone else's words wait for the person's consent, and ``asking`` asks; ``links``
        answers a message that is only a link, as capture mode does (clipped, with no model call)."""
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
        self._documents = documents
        self._photos = photos
        self._progress = progress
        self._filer = filer or CaptureModel("Inbox", hint=None, log=False)
        self._dead_letters = DeadLetters(db)
        self._profile = profile
        self._asking = asking
        self._policy = policy
        self._links = links

    async def __call__(self, delivery: Delivery) -> bool | None:
        """Run the model (or a slash command) on one inbound message and finish it atomically; an
        answer to a question for consent settles the question and goes on with the run it stopped."""
        message = delivery.parse(InboundMessage)
        if message.answer is not None:
            return await self._answered(delivery, message)
        message, parts = await self._with_album(delivery, message)
        message = _as_task(message)
        context = _context(message, run_id=uuid.uuid4().hex, fence=partial(self._bus.renew, delivery))
        started = time.perf_counter()
        command = _command_of(message)
        model, mode = self._model, self._mode
        if command is None and self._over_budget is not None and await self._over_budget_today(context):
            model, mode = self._over_budget, "capture"
        elif command is None and self._links is not None and only_link(message.text) is not None:
            model, mode = self._links, "capture"  # a link sent alone is clipped, always, and at once
        starting = self._store.start_run(
            context.run_id,
            conversation=message.conversation,
            inbound_id=message.id,
            model=f"/{command.name}" if command else model.name,
            mode="command" if command else mode,
            rerun=delivery.attempts > 1,
        )
        if command is not None:
            await starting
            await self._decline_questions(message)
            answered = await self._commands.run(command, context)
            result = RunResult("completed", answered.reply, messages=[], tools_called=answered.tools_called)
            if answered.failure:
                result.status, result.reason = "failed", answered.failure
            await self._finish(delivery, context, result, parts, button=answered.button)
            return ACKED
        # The run's start, the conversation's history and any question it waits on, sent together.
        _, turns, waits = await self._db.gather(
            starting,
            self._store.load_history(message.conversation, self._history_turns),
            self._waits_on(message),
        )
        if waits:  # the person wrote instead of answering: the question is declined, its turn closed
            await self._decline_questions(message)
            turns = await self._store.load_history(message.conversation, self._history_turns)
        # Off the receiving path: the channel stored the recording and moved on; a crash here re-runs.
        text = await self._voice.prepare(message, context) if self._voice else message.text
        text = with_others(text, message, labelled=mode == "assistant")
        if self._documents is not None and mode == "assistant":
            text = await self._documents.prepare(message, text, context)
        seen = Seen()
        if mode == "assistant" and message.images and self._photos is not None:
            seen = await self._photos.show(message.images, context)
            text = "\n".join([text, *seen.lines])
        history = fit(turns, self._history_tokens, window=self._history_turns)
        result = await self._run(
            delivery,
            context,
            model=model,
            mode=mode,
            history=history,
            text=self._as_read(message, text, retried=mode == "assistant"),
            images=seen.blocks,
            parts=parts,
        )
        log.info(
            "← %s run=%s %s %.1fms tools=%s",
            delivery.id,
            context.run_id,
            result.status,
            (time.perf_counter() - started) * 1000,
            ",".join(result.tools_called) or "-",
        )
        return ACKED

    async def _run(
        self,
        delivery: Delivery,
        context: ToolContext,
        *,
        model: ModelClient,
        mode: str,
        history: list[dict[str, Any]],
        text: str = "",
        images: list[dict[str, Any]] | None = None,
        resumed: Resumed | None = None,
        parts: list[int] | None = None,
    ) -> RunResult:
        """Run the loop for ``context`` (or go on with a ``resumed`` one) and finish the run: its end
        written and its message acked, or, when it stops to ask the person, suspended."""
        parts = [] if parts is None else parts
        meter = _Meter(self._prices, self._clock) if mode == "assistant" else None
        draft = self._open_draft(context)
        # Read every turn, so an edit made in Obsidian reaches the next answer.
        profile = await self._profile() if self._profile is not None and mode == "assistant" else None
        recorder = _Recorder(self._store, self._bus, context, self._summarizer, meter, model.name)
        ended = False
        try:
            result = await run_turn(
                model=model,
                dispatcher=self._dispatcher,
                system=self._system,
                history=history,
                text=text,
                context=context,
                recorder=recorder,
                limits=self._limits,
                zone=zone_name(self._clock.tz),
                listener=ReplyDraft(draft, context) if draft else None,
                images=images or (),
                profile=profile,
                policy=self._policy,
                resumed=resumed,
            )
            ended = True
        except ModelUnavailable as exc:
            await self._unavailable(delivery, context, exc)
        except ModelRejected as exc:
            await self._rejected(context, exc)
        finally:
            # Ended before the reply is queued: a channel never shows a draft of a reply it sent.
            if draft is not None:
                draft.end()
            # What a round cut short (the worker stopping, the model failing) had done is kept in the
            # trail all the same; a turn that ended keeps its last round with the rest of its end.
            if not ended:
                await recorder.flush()
        if result.waiting is not None and result.question is not None and self._asking is not None:
            writes = self._asking.suspending(context, result.waiting, result.question)
            writes.append(self._store.keep_changes(context.run_id, context.changes))  # its end adds the rest
            async with self._db.transaction() as tx:
                acks = [self._bus.ack(i) for i in parts]
                await tx.gather(recorder.flush(), *writes, *acks, _ack(self._bus, delivery))
            return result
        if mode == "capture" and (error := filed(result.messages).error) is not None:
            result.status, result.reason = "failed", f"the message could not be filed: {error}"
        await self._finish(delivery, context, result, parts, trail=recorder)
        return result

    def _waits_on(self, message: InboundMessage) -> Awaitable[list[Question]]:
        """The questions for consent the conversation waits on (none to decline for a reminder's message)."""
        if self._asking is None or message.reminder is not None:
            return _nothing()
        return self._asking.questions.open_in(message.conversation)

    async def _decline_questions(self, message: InboundMessage) -> None:
        if self._asking is not None and message.reminder is None:
            await self._asking.decline_open(message.conversation)

    async def _answered(self, delivery: Delivery, message: InboundMessage) -> bool | None:
        """Settle a question for consent with the person's answer (or its timeout), and go on with the
        run it stopped when the person answered (its end acks the answer: ``ACKED``). Redelivered after a
        crash, the same answer goes on again, and the allowed call is not made twice
        (``bot.consent.Questions.start_call``)."""
        if self._asking is None:
            return None
        question = await self._asking.decide(delivery, message)
        if question is None or question.state not in ("allowed", "denied"):
            return None
        context = context_of(question)
        context.fence = partial(self._bus.renew, delivery)
        outcome = await self._asking.outcome(question, context, self._dispatcher)
        _, turns = await self._db.gather(
            self._store.mark_run(context.run_id, "running"),
            self._store.load_history(question.conversation, self._history_turns),
        )
        history = fit(turns, self._history_tokens, window=self._history_turns)
        resumed = Resumed(question.waiting, outcome, made=question.state == "allowed")
        await self._run(delivery, context, model=self._model, mode=self._mode, history=history, resumed=resumed)
        return ACKED

    async def _with_album(self, delivery: Delivery, message: InboundMessage) -> tuple[InboundMessage, list[int]]:
        """``message`` with the other parts of its album that are waiting behind it (their text and
        images after its own), and their bus ids; a message of no album as it is."""
        if message.group is None:
            return message, []
        parts = [p for p in await self._bus.group(INBOUND, delivery.conversation, message.group) if p.id != delivery.id]
        if not parts:
            return message, []
        others = [part.parse(InboundMessage) for part in parts]
        texts = [m.text for m in (message, *others) if m.text]
        images = [path for m in (message, *others) for path in m.images]
        attachments = [attachment for m in (message, *others) for attachment in m.attachments]
        log.info("album %s: %d parts in one turn", message.group, len(parts) + 1)
        merged = {"text": "\n".join(texts), "images": images, "attachments": attachments}
        return message.model_copy(update=merged), [p.id for p in parts]

    def _open_draft(self, context: ToolContext) -> DraftWriter | None:
        if self._progress is None:
            return None
        return self._progress.open(
            key=context.inbound_id,
            channel=context.channel,
            conversation=context.conversation,
            recipient=context.recipient,
        )

    def _as_read(self, message: InboundMessage, text: str, *, retried: bool = False) -> str:
        """``text`` (the message's, with any transcript) as the model reads it and history keeps it:
        stamped with the local time the message was received, which a re-run after a crash or a retry
        keeps (it travels with the message). With ``retried``, a message sent again by ``vaultbot retry``
        says when it was first sent and where it was filed then, so the model does not file it twice."""
        if retried and message.retry is not None:
            first = message.retry.first_received_at.astimezone(self._clock.tz)
            where = (
                f" It was filed in the vault then, as {message.retry.filed}: update that note if needed "
                "rather than filing the message again."
                if message.retry.filed
                else ""
            )
            sent = f"first sent at {first:%Y-%m-%d %H:%M}, when it could not be answered"
            text += f"\n\n[vaultbot: this message was {sent}.{where}]"
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

    async def _finish(
        self,
        delivery: Delivery,
        context: ToolContext,
        result: RunResult,
        parts: list[int] | None = None,
        *,
        button: Button | None = None,
        trail: _Recorder | None = None,
    ) -> None:
        """Write the steps ``trail`` holds, queue the replies (with ``button`` under the reply), keep
        the turn, end the run and ack the message (and the other ``parts`` of its album), in one
        transaction whose statements are sent together."""
        kept = compact(result.messages)
        stored = encode_turn(kept)  # encoded once: for the estimate and for the row
        tokens = estimate_json_tokens(stored)
        replies = []
        # A run that never called send_message still answers, with its final text.
        if context.sent == 0 and result.final_text.strip():
            replies.append(reply(context, with_where(result.final_text, context.changes), button=button))
        # A failed run has already said what failed (a capture's or a command's own reply).
        if result.reason and result.status != "failed":
            replies.append(notice(context, f"I stopped here: {result.reason}.", key="stopped"))
        async with self._db.transaction() as tx:
            # Coroutines made inside the block: if BEGIN fails, none is left unawaited.
            writes: list[Awaitable[object]] = [trail.flush()] if trail is not None else []
            writes += [self._bus.put(publication) for publication in replies]
            if kept:  # commands leave the conversation's history alone
                writes.append(self._store.append_encoded_turn(context.conversation, context.inbound_id, stored, tokens))
            writes.append(
                self._store.finish_run(
                    context.run_id,
                    status=result.status,
                    reason=result.reason,
                    usage=result.usage.as_dict(),
                    tools_called=result.tools_called,
                    final_text=result.final_text,
                    changes=context.changes,  # what it changed in the vault, kept with it (bot.undo)
                )
            )
            writes += [*(self._bus.ack(message_id) for message_id in parts or []), _ack(self._bus, delivery)]
            await tx.gather(*writes)

    async def _unavailable(self, delivery: Delivery, context: ToolContext, exc: ModelUnavailable) -> NoReturn:
        last = delivery.attempts >= self._max_attempts
        # The last attempt's run failed like the others; the run that files the dead letter is the
        # one marked dead_lettered, whose id `vaultbot retry` takes (see on_dead).
        await self._store.finish_run(
            context.run_id,
            status="failed",
            reason=f"model unreachable: {exc}",
            usage={},
            tools_called=[],
            final_text=None,
            changes=context.changes,  # a retry finds its notes written and changes nothing: kept here
        )
        # Told once per message, on the first failure, not on every retry.
        await queue_notice(self._bus, context, UNREACHABLE, key="model-unreachable")
        if not last:
            data = {"attempt": delivery.attempts, "error": str(exc), "retry_after": exc.retry_after}
            await _Recorder(self._store, self._bus, context).event("run.retrying", data)
        raise Retry(delay=exc.retry_after, reason=str(exc)) from exc

    async def _rejected(self, context: ToolContext, exc: ModelRejected) -> NoReturn:
        # The user is told once, with where the message was filed, when it is dead-lettered (on_dead).
        await self._store.finish_run(
            context.run_id,
            status="failed",
            reason=str(exc),
            usage={},
            tools_called=[],
            final_text=None,
            changes=context.changes,
        )
        raise ModelDeadLetter(str(exc))

    async def on_dead(self, delivery: Delivery, error: BaseException) -> None:
        """After the last attempt: file the message as capture mode does, tell the user where in one
        line, log it with its text and its id, and close its turn in history so the next message does
        not read as its continuation.

        Exactly once across crashes: the record of the dead letter (unique per bus message), the log
        entry, the notice, the closed turn and the run's end are one transaction, checked first on a
        re-run; a crash before it files again, which a note with the same text makes no second note of."""
        message = delivery.parse(InboundMessage)
        reason = describe(error)
        # The user hears our own sentences about the model, never a raw exception's text.
        cause = error.__cause__ if isinstance(error, Retry) else error
        told = str(cause) if isinstance(cause, ModelError | DeadLetter) else "an internal error, which was logged"
        if message.answer is not None:  # an answer is not a note: the run it went on with ends, told
            if self._asking is not None:
                await self._asking.give_up(message.answer.question, told)
            return
        if _command_of(message) is not None:  # a command is not a note: it is only apologised for
            context = _context(message, run_id="")
            if not isinstance(error, DeadLetter):
                apology = APOLOGY.format(attempts=delivery.attempts, error=told)
                await queue_notice(self._bus, context, apology, key="dead")
            summary = f"Command not handled after {delivery.attempts} attempt(s): {reason}. Message: {message.text}"
            await self._store.add_interaction(
                conversation=message.conversation, category="error", summary=summary, run_id=None
            )
            return
        if await self._dead_letters.of_message(delivery.id) is not None:
            return  # filed and told before a crash; the worker settles it now
        context = _context(message, run_id=uuid.uuid4().hex)
        await self._store.start_run(
            context.run_id,
            conversation=message.conversation,
            inbound_id=message.id,
            model=self._filer.name,
            mode="capture",
            rerun=True,  # closes a filing run cut short by a crash
        )
        outcome = await self._file(message, context)
        letter = Letter(
            context.run_id, delivery.id, message.conversation, message.text, reason, outcome.path, now_iso(), None, None
        )
        why = (
            f"I can't answer: {told}."
            if isinstance(cause, ModelDeadLetter)
            else APOLOGY.format(attempts=delivery.attempts, error=told)
        )
        async with self._db.transaction() as tx:
            if not await self._dead_letters.add(tx, letter):
                return
            await self._store.add_interaction(
                conversation=message.conversation,
                category="error",
                summary=_dead_summary(letter, delivery.attempts, outcome),
                run_id=context.run_id,
            )
            await queue_notice(self._bus, context, f"{why} {_where(letter, outcome)}", key="dead")
            await self._close_unanswered(message, told)
            await self._store.finish_run(
                context.run_id,
                status="dead_lettered" if outcome.path else "failed",
                reason=f"not answered ({reason}); "
                + (f"filed as {outcome.path}" if outcome.path else f"could not be filed: {outcome.error}"),
                usage={},
                tools_called=["vault_write"],
                final_text=None,
                changes=context.changes,
            )

    async def _file(self, message: InboundMessage, context: ToolContext) -> Filed:
        """File a dead letter through the capture script, the loop and the tools, as capture mode does."""
        recorder = _Recorder(self._store, self._bus, context)
        try:
            text = await self._voice.prepare(message, context) if self._voice else message.text
            result = await run_turn(
                model=self._filer,
                dispatcher=self._dispatcher,
                system=self._system,
                history=[],
                text=self._as_read(message, text),
                context=context,
                recorder=recorder,
                limits=self._limits,
            )
            await recorder.flush()
        except Exception:
            log.exception("filing dead letter %s failed", message.id)
            return Filed(None, "an internal error, which was logged")
        return filed(result.messages)

    async def _close_unanswered(self, message: InboundMessage, told: str) -> None:
        unanswered = [
            {"role": "user", "content": self._as_read(message, message.text)},
            {"role": "assistant", "content": [{"type": "text", "text": f"(Not answered: {told}.)"}]},
        ]
        await self._store.append_turn(message.conversation, message.id, unanswered, tokens=estimate_tokens(unanswered))


def _command_of(message: InboundMessage) -> Command | None:
    """The slash command the person sent, if any: a scheduled task's text is never one (a scheduled
    ``/undo`` or ``/new`` would act with no one there to ask it)."""
    return None if message.reminder is not None else parse_command(message.text)


def _as_task(message: InboundMessage) -> InboundMessage:
    """A scheduled task made by a run that held someone else's words, with its text as their words: it
    is as tainted when it runs as the run that scheduled it (``bot.reminders``)."""
    if message.reminder is None or not message.reminder.sources or not message.text:
        return message
    part = UntrustedPart(source=note_source(message.reminder.sources, "scheduled task"), text=message.text)
    return message.model_copy(update={"text": "", "untrusted": [part, *message.untrusted]})


async def _nothing() -> list[Question]:
    return []


async def _ack(bus: Bus, delivery: Delivery) -> None:
    """Ack ``delivery`` in the transaction that records its turn, fenced by its claim's attempt."""
    if not await bus.ack(delivery.id, attempt=delivery.attempts):
        raise LeaseLost(f"message {delivery.id} was claimed again since attempt {delivery.attempts}")


class ModelDeadLetter(DeadLetter):
    """The model refused the request for a reason only the user can fix (``ModelRejected``)."""


def _where(letter: Letter, outcome: Filed) -> str:
    """The second half of the one line a dead letter is told in: where it is, and how to send it again."""
    retry = f"`{retry_command(letter.run_id)}` sends it to the model again"
    if outcome.path:
        return f"It is saved in your vault as {outcome.path}; {retry}."
    return f"I could not save it in your vault either ({outcome.error}); it is kept, and {retry}."


def _dead_summary(letter: Letter, attempts: int, outcome: Filed) -> str:
    """The log entry of a dead letter: its id first (the log's table cuts long summaries), then what
    happened, then the message itself."""
    where = f"filed as {outcome.path}" if outcome.path else f"could not be filed ({outcome.error})"
    return (
        f"Dead letter {letter.short_id} (`{retry_command(letter.run_id)}`): not answered after "
        f"{attempts} attempt(s) ({letter.error}); {where}. Message: {letter.text}"
    )


def _context(
    message: InboundMessage, *, run_id: str, fence: Callable[[], Awaitable[None]] | None = None
) -> ToolContext:
    # The recipient comes from the message as the channel received it, never from the model.
    return ToolContext(
        conversation=message.conversation,
        channel=message.channel,
        recipient=message.reply_to,
        run_id=run_id,
        inbound_id=message.id,
        person=message.sender.id,
        changes=brought(message),
        fence=fence,
    )
