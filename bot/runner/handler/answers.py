"""The person's answers to questions for consent: an answer settles its question and goes on with the
run it stopped; a new message instead of an answer declines the questions open in its conversation."""

from __future__ import annotations

from collections.abc import Awaitable
from functools import partial

from bot.bus import ACKED, Delivery, InboundMessage
from bot.consent import Question
from bot.runner.asking import Asking, context_of
from bot.runner.handler.running import Runs
from bot.runner.handler.wiring import Assistant, Storage, Window
from bot.runner.loop import Resumed


class Answers:
    """Settles questions for consent through ``asking`` (none: no question is ever asked)."""

    def __init__(
        self, storage: Storage, assistant: Assistant, window: Window, runs: Runs, asking: Asking | None
    ) -> None:
        self._storage = storage
        self._assistant = assistant
        self._window = window
        self._runs = runs
        self._asking = asking

    async def answered(self, delivery: Delivery, message: InboundMessage) -> bool | None:
        """Settle a question for consent with the person's answer (or its timeout), and go on with the
        run it stopped when the person answered (its end acks the answer: ``ACKED``). Redelivered after a
        crash, the same answer goes on again, and the allowed call is not made twice
        (``bot.consent.Questions.start_call``)."""
        if self._asking is None:
            return None
        question = await self._asking.decide(delivery, message)
        if question is None or question.state not in ("allowed", "denied"):
            return None
        storage, assistant = self._storage, self._assistant
        context = context_of(question)
        context.fence = partial(storage.bus.renew, delivery)
        outcome = await self._asking.outcome(question, context, assistant.dispatcher)
        _, turns = await storage.db.gather(
            storage.store.mark_run(context.run_id, "running"),
            storage.store.load_history(question.conversation, self._window.turns),
        )
        resumed = Resumed(question.waiting, outcome, made=question.state == "allowed")
        history = self._window.fit(turns)
        await self._runs.run(
            delivery, context, model=assistant.model, mode=assistant.mode, history=history, resumed=resumed
        )
        return ACKED

    def waits_on(self, message: InboundMessage) -> Awaitable[list[Question]]:
        """The questions for consent the conversation waits on (none to decline for a reminder's message)."""
        if self._asking is None or message.reminder is not None:
            return _nothing()
        return self._asking.questions.open_in(message.conversation)

    async def decline(self, message: InboundMessage) -> None:
        """Decline the questions open in the conversation of ``message`` (not a reminder's), closing their turns."""
        if self._asking is not None and message.reminder is None:
            await self._asking.decline_open(message.conversation)

    async def give_up(self, question: str, told: str) -> None:
        """End the run that went on with an answer to ``question`` but could not finish, telling why."""
        if self._asking is not None:
            await self._asking.give_up(question, told)


async def _nothing() -> list[Question]:
    return []
