"""A new message's turn: the model (or a stand-in, or a slash command) answers it with the conversation's
history and what the message brought. A recording's transcript is kept once obtained, so a re-run after a
crash reuses it. The parts of an album (inbound messages with one ``group``) are handled as one message,
by the delivery of its first part: the other parts, still pending behind it on the bus, are acked in the
same finishing transaction, so the album's turn runs once."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable
from functools import partial

from bot.bus import ACKED, Delivery, InboundMessage
from bot.runner.capture import only_link
from bot.runner.commands import Command, CommandRunner
from bot.runner.handler.answers import Answers
from bot.runner.handler.finishing import finish
from bot.runner.handler.inputs import Inputs
from bot.runner.handler.reading import as_read, as_task, command_of, context_for, with_album
from bot.runner.handler.running import Runs
from bot.runner.handler.wiring import Assistant, StandIns, Storage, Window
from bot.runner.loop import RunResult
from bot.runner.model import ModelClient
from bot.tools import ToolContext, queue_notice

log = logging.getLogger(__name__)


class Turns:
    """Takes each new message: its command run, or its run of the model that answers it."""

    def __init__(
        self,
        storage: Storage,
        assistant: Assistant,
        window: Window,
        *,
        inputs: Inputs,
        stand_ins: StandIns,
        commands: CommandRunner,
        answers: Answers,
        runs: Runs,
    ) -> None:
        self._storage = storage
        self._assistant = assistant
        self._window = window
        self._inputs = inputs
        self._stand_ins = stand_ins
        self._commands = commands
        self._answers = answers
        self._runs = runs

    async def take(self, delivery: Delivery, message: InboundMessage) -> bool | None:
        """Run the model (or a slash command) on ``message`` and finish it atomically."""
        message, parts = await with_album(self._storage.bus, delivery, message)
        message = as_task(message)
        context = context_for(message, run_id=uuid.uuid4().hex, fence=partial(self._storage.bus.renew, delivery))
        started = time.perf_counter()
        command = command_of(message)
        model, mode = self._assistant.model, self._assistant.mode
        if command is None:
            model, mode = await self._answerer(message, context)
        starting = self._storage.store.start_run(
            context.run_id,
            conversation=message.conversation,
            inbound_id=message.id,
            model=f"/{command.name}" if command else model.name,
            mode="command" if command else mode,
            rerun=delivery.attempts > 1,
        )
        if command is not None:
            await self._command(delivery, context, message, command, starting, parts)
            return ACKED
        result = await self._answer(delivery, context, message, model, mode, starting, parts)
        log.info(
            "← %s run=%s %s %.1fms tools=%s",
            delivery.id,
            context.run_id,
            result.status,
            (time.perf_counter() - started) * 1000,
            ",".join(result.tools_called) or "-",
        )
        return ACKED

    async def _answerer(self, message: InboundMessage, context: ToolContext) -> tuple[ModelClient, str]:
        """The model that answers ``message``, and its mode: a stand-in in capture mode once the day's
        budget is spent or for a link sent alone, else the assistant."""
        stand_ins = self._stand_ins
        if stand_ins.over_budget is not None and await self._over_budget_today(context):
            return stand_ins.over_budget, "capture"
        if stand_ins.links is not None and only_link(message.text) is not None:
            return stand_ins.links, "capture"  # a link sent alone is clipped, always, and at once
        return self._assistant.model, self._assistant.mode

    async def _over_budget_today(self, context: ToolContext) -> bool:
        """True when today's budget is spent; the conversation is told once that day."""
        budget = self._stand_ins.budget
        if budget is None:
            return False
        state = await budget.state()
        if not state.exhausted:
            return False
        await queue_notice(self._storage.bus, context, state.notice(), key="budget-spent", once_per=state.day)
        return True

    async def _command(
        self,
        delivery: Delivery,
        context: ToolContext,
        message: InboundMessage,
        command: Command,
        starting: Awaitable[None],
        parts: list[int],
    ) -> None:
        """Run the slash command (which declines any question open) and finish it: no model call."""
        await starting
        await self._answers.decline(message)
        answered = await self._commands.run(command, context)
        result = RunResult("completed", answered.reply, messages=[], tools_called=answered.tools_called)
        if answered.failure:
            result.status, result.reason = "failed", answered.failure
        await finish(self._storage, delivery, context, result, parts, button=answered.button)

    async def _answer(
        self,
        delivery: Delivery,
        context: ToolContext,
        message: InboundMessage,
        model: ModelClient,
        mode: str,
        starting: Awaitable[None],
        parts: list[int],
    ) -> RunResult:
        """Run ``model`` on ``message`` with the conversation's history and what the message brought."""
        store, turns_kept = self._storage.store, self._window.turns
        # The run's start, the conversation's history and any question it waits on, sent together.
        _, turns, waits = await self._storage.db.gather(
            starting, store.load_history(message.conversation, turns_kept), self._answers.waits_on(message)
        )
        if waits:  # the person wrote instead of answering: the question is declined, its turn closed
            await self._answers.decline(message)
            turns = await store.load_history(message.conversation, turns_kept)
        text, seen = await self._inputs.read(message, context, mode)
        return await self._runs.run(
            delivery,
            context,
            model=model,
            mode=mode,
            history=self._window.fit(turns),
            text=as_read(message, text, self._assistant.clock.tz, retried=mode == "assistant"),
            images=seen.blocks,
            parts=parts,
        )
