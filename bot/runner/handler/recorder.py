"""The audit recorder: a run's steps in the store, priced when they call a priced model, and its events
on the bus, for the channel to tell its user."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.bus import Bus, Event, events_topic
from bot.clock import Clock
from bot.runner.model import Usage
from bot.runner.pricing import PriceTable
from bot.runner.summary import AuditSummarizer
from bot.store import CallUsage, Step, Store
from bot.tools import ToolContext


@dataclass(frozen=True)
class Audit:
    """What the audit trail is written with: the prices of model calls, and the summarizer of tool
    outputs (none: no summaries)."""

    prices: PriceTable
    summarizer: AuditSummarizer | None = None


@dataclass(frozen=True)
class Meter:
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
class Recorder:
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
    meter: Meter | None = None
    model: str = ""
    held: list[Step] = field(default_factory=list)

    async def step(self, **fields: Any) -> None:
        """Hold one step, with its summary and, for a priced model call, its tokens and cost."""
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
        """Write the steps held."""
        if self.held:
            steps, self.held = self.held, []
            await self.store.add_steps(self.context.run_id, steps)

    async def event(self, type: str, data: dict[str, Any], *, notice: str | None = None) -> None:
        """Record an event in the trail, after what is held, and publish it for the channel."""
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
