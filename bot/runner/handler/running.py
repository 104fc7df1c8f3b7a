"""One run of the loop on a message's context, and how it ends: finished, suspended to ask the person
for consent, or failed for now (retried) or for good (dead-lettered)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, NoReturn

from bot.bus import Delivery, Retry
from bot.clock import zone_name
from bot.runner.asking import Asking
from bot.runner.capture import filed
from bot.runner.drafting import ReplyDraft
from bot.runner.errors import ModelDeadLetter, ModelRejected, ModelUnavailable
from bot.runner.handler.finishing import ack, finish
from bot.runner.handler.recorder import Audit, Meter, Recorder
from bot.runner.handler.wiring import Assistant, Storage
from bot.runner.loop import Resumed, RunResult, run_turn
from bot.runner.model import ModelClient, TextListener
from bot.streaming import DraftWriter, Progress
from bot.tools import ToolContext, queue_notice

UNREACHABLE = "I can't reach the model right now. Your message is safe; I'll answer as soon as it's back."


class Runs:
    """Runs the loop and ends the run. ``progress`` receives the reply's text as it is written, for
    channels that show it; ``asking`` suspends a run that stops to ask the person."""

    def __init__(
        self,
        storage: Storage,
        assistant: Assistant,
        audit: Audit,
        *,
        max_attempts: int,
        progress: Progress | None = None,
        asking: Asking | None = None,
    ) -> None:
        self._storage = storage
        self._assistant = assistant
        self._audit = audit
        self._max_attempts = max_attempts
        self._progress = progress
        self._asking = asking

    async def run(
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
        assistant, parts = self._assistant, [] if parts is None else parts
        meter = Meter(self._audit.prices, assistant.clock) if mode == "assistant" else None
        draft = self._open_draft(context)
        # Read every turn, so an edit made in Obsidian reaches the next answer.
        profile = await assistant.profile() if assistant.profile is not None and mode == "assistant" else None
        recorder = Recorder(self._storage.store, self._storage.bus, context, self._audit.summarizer, meter, model.name)
        turn = partial(
            run_turn,
            model=model,
            dispatcher=assistant.dispatcher,
            system=assistant.system,
            history=history,
            text=text,
            context=context,
            recorder=recorder,
            limits=assistant.limits,
            zone=zone_name(assistant.clock.tz),
            images=images or (),
            profile=profile,
            policy=assistant.policy,
            resumed=resumed,
        )
        result = await self._loop(delivery, context, recorder, draft, turn)
        if result.waiting is not None and result.question is not None and self._asking is not None:
            await self._suspend(delivery, context, result, recorder, parts)
            return result
        if mode == "capture" and (error := filed(result.messages).error) is not None:
            result.status, result.reason = "failed", f"the message could not be filed: {error}"
        await finish(self._storage, delivery, context, result, parts, trail=recorder)
        return result

    async def _loop(
        self,
        delivery: Delivery,
        context: ToolContext,
        recorder: Recorder,
        draft: DraftWriter | None,
        turn: Callable[..., Awaitable[RunResult]],
    ) -> RunResult:
        """``turn`` (the loop, all but its listener given) heard by ``draft``; a model that fails is
        retried later or dead-lettered."""
        ended = False
        listener: TextListener | None = ReplyDraft(draft, context) if draft else None
        try:
            result = await turn(listener=listener)
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
        return result

    async def _suspend(
        self, delivery: Delivery, context: ToolContext, result: RunResult, recorder: Recorder, parts: list[int]
    ) -> None:
        """Keep the run as it stood and its question, and ack its message, in one transaction."""
        assert self._asking is not None and result.waiting is not None and result.question is not None
        storage = self._storage
        writes = self._asking.suspending(context, result.waiting, result.question)
        writes.append(storage.store.keep_changes(context.run_id, context.changes))  # its end adds the rest
        async with storage.db.transaction() as tx:
            acks = [storage.bus.ack(i) for i in parts]
            await tx.gather(recorder.flush(), *writes, *acks, ack(storage.bus, delivery))

    def _open_draft(self, context: ToolContext) -> DraftWriter | None:
        if self._progress is None:
            return None
        return self._progress.open(
            key=context.inbound_id,
            channel=context.channel,
            conversation=context.conversation,
            recipient=context.recipient,
        )

    async def _unavailable(self, delivery: Delivery, context: ToolContext, exc: ModelUnavailable) -> NoReturn:
        last = delivery.attempts >= self._max_attempts
        # The last attempt's run failed like the others; the run that files the dead letter is the
        # one marked dead_lettered, whose id `vaultbot retry` takes (see bot.runner.handler.dead).
        await self._storage.store.finish_run(
            context.run_id,
            status="failed",
            reason=f"model unreachable: {exc}",
            usage={},
            tools_called=[],
            final_text=None,
            changes=context.changes,  # a retry finds its notes written and changes nothing: kept here
        )
        # Told once per message, on the first failure, not on every retry.
        await queue_notice(self._storage.bus, context, UNREACHABLE, key="model-unreachable")
        if not last:
            data = {"attempt": delivery.attempts, "error": str(exc), "retry_after": exc.retry_after}
            await Recorder(self._storage.store, self._storage.bus, context).event("run.retrying", data)
        raise Retry(delay=exc.retry_after, reason=str(exc)) from exc

    async def _rejected(self, context: ToolContext, exc: ModelRejected) -> NoReturn:
        # The user is told once, with where the message was filed, when it is dead-lettered.
        await self._storage.store.finish_run(
            context.run_id,
            status="failed",
            reason=str(exc),
            usage={},
            tools_called=[],
            final_text=None,
            changes=context.changes,
        )
        raise ModelDeadLetter(str(exc))
