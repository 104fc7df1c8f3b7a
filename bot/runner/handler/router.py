"""The inbound worker's handler: one inbound message → one run → replies, history, audit trail.

Idempotent across crashes: replies are keyed by (inbound message, sequence) in the outbox, the
turn is appended to history once per inbound message, and the finishing writes (reply, history,
run record, ack) are one transaction, so a crash before it re-runs the message and a crash after
it finds the message done. The handler routes each message to the module with its job: an answer to
a question for consent (``answers``), a new message's turn (``turn``), a dead letter (``dead``).
"""

from __future__ import annotations

from bot.bus import Delivery, InboundMessage
from bot.runner.asking import Asking
from bot.runner.commands import CommandRunner
from bot.runner.handler.answers import Answers
from bot.runner.handler.dead import DeadLetterFiler
from bot.runner.handler.inputs import Inputs
from bot.runner.handler.recorder import Audit
from bot.runner.handler.running import Runs
from bot.runner.handler.turn import Turns
from bot.runner.handler.wiring import Assistant, StandIns, Storage, Window
from bot.streaming import Progress


class TurnHandler:
    """Handles deliveries from the inbound topic (and the consent topic's timeouts)."""

    def __init__(
        self,
        *,
        storage: Storage,
        assistant: Assistant,
        window: Window,
        audit: Audit,
        commands: CommandRunner,
        max_attempts: int,
        inputs: Inputs | None = None,
        stand_ins: StandIns | None = None,
        progress: Progress | None = None,
        asking: Asking | None = None,
    ) -> None:
        """``window`` is how much history a turn reads; ``max_attempts`` the bus's, after which a message
        is dead-lettered; ``progress`` receives the reply's text as it is written, for channels that
        show it; ``asking`` asks the person for consent, where ``assistant.policy`` says a call waits."""
        inputs = inputs or Inputs()
        stand_ins = stand_ins or StandIns()
        self._dispatcher = assistant.dispatcher  # the tools every run calls
        runs = Runs(storage, assistant, audit, max_attempts=max_attempts, progress=progress, asking=asking)
        self._answers = Answers(storage, assistant, window, runs, asking)
        self._turns = Turns(
            storage,
            assistant,
            window,
            inputs=inputs,
            stand_ins=stand_ins,
            commands=commands,
            answers=self._answers,
            runs=runs,
        )
        self._dead = DeadLetterFiler(storage, assistant, inputs=inputs, filer=stand_ins.filer, answers=self._answers)

    async def __call__(self, delivery: Delivery) -> bool | None:
        """Run the model (or a slash command) on one inbound message and finish it atomically; an
        answer to a question for consent settles the question and goes on with the run it stopped."""
        message = delivery.parse(InboundMessage)
        if message.answer is not None:
            return await self._answers.answered(delivery, message)
        return await self._turns.take(delivery, message)

    async def on_dead(self, delivery: Delivery, error: BaseException) -> None:
        """After the last attempt: see :meth:`DeadLetterFiler.on_dead`."""
        await self._dead.on_dead(delivery, error)
