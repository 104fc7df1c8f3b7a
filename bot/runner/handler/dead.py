"""Dead letters: a message the model could not answer after its last attempt is never only in the
dead-letter queue. It is filed as capture mode does, the user is told where in one line, and it is
logged with its text and the id ``vaultbot retry`` takes, once (see :meth:`DeadLetterFiler.on_dead`)."""

from __future__ import annotations

import logging
import uuid

from bot.backoff import describe
from bot.bus import Delivery, InboundMessage, Retry
from bot.db import now_iso
from bot.runner.capture import CaptureModel, Filed, filed
from bot.runner.errors import DeadLetter, ModelDeadLetter, ModelError
from bot.runner.handler.answers import Answers
from bot.runner.handler.inputs import Inputs
from bot.runner.handler.reading import as_read, command_of, context_for
from bot.runner.handler.recorder import Recorder
from bot.runner.handler.wiring import Assistant, Storage
from bot.runner.history import estimate_tokens
from bot.runner.loop import run_turn
from bot.store import DeadLetter as Letter
from bot.store import DeadLetters, retry_command
from bot.tools import ToolContext, queue_notice

log = logging.getLogger(__name__)

APOLOGY = "Sorry, I could not handle your message after {attempts} attempts ({error})."


class DeadLetterFiler:
    """Files, tells and logs the messages the worker dead-letters; ``filer`` is the model that files them."""

    def __init__(
        self, storage: Storage, assistant: Assistant, *, inputs: Inputs, filer: CaptureModel, answers: Answers
    ) -> None:
        self._storage = storage
        self._assistant = assistant
        self._inputs = inputs
        self._filer = filer
        self._answers = answers
        self._dead_letters = DeadLetters(storage.db)

    async def on_dead(self, delivery: Delivery, error: BaseException) -> None:
        """After the last attempt: file the message as capture mode does, tell the user where in one
        line, log it with its text and its id, and close its turn in history so the next message does
        not read as its continuation.

        Exactly once across crashes: the record of the dead letter (unique per bus message), the log
        entry, the notice, the closed turn and the run's end are one transaction, checked first on a
        re-run; a crash before it files again, which a note with the same text makes no second note of."""
        message = delivery.parse(InboundMessage)
        # The user hears our own sentences about the model, never a raw exception's text.
        cause = error.__cause__ if isinstance(error, Retry) else error
        told = str(cause) if isinstance(cause, ModelError | DeadLetter) else "an internal error, which was logged"
        if message.answer is not None:  # an answer is not a note: the run it went on with ends, told
            await self._answers.give_up(message.answer.question, told)
            return
        if command_of(message) is not None:  # a command is not a note: it is only apologised for
            await self._apologise(delivery, message, error, told)
            return
        if await self._dead_letters.of_message(delivery.id) is not None:
            return  # filed and told before a crash; the worker settles it now
        why = (
            f"I can't answer: {told}."
            if isinstance(cause, ModelDeadLetter)
            else APOLOGY.format(attempts=delivery.attempts, error=told)
        )
        await self._keep(delivery, message, describe(error), told, why)

    async def _apologise(self, delivery: Delivery, message: InboundMessage, error: BaseException, told: str) -> None:
        """Say sorry for a command not handled (unless retrying could not have helped), and log it."""
        if not isinstance(error, DeadLetter):
            apology = APOLOGY.format(attempts=delivery.attempts, error=told)
            await queue_notice(self._storage.bus, context_for(message, run_id=""), apology, key="dead")
        not_handled = f"Command not handled after {delivery.attempts} attempt(s): {describe(error)}."
        summary = f"{not_handled} Message: {message.text}"
        await self._storage.store.add_interaction(
            conversation=message.conversation, category="error", summary=summary, run_id=None
        )

    async def _keep(self, delivery: Delivery, message: InboundMessage, reason: str, told: str, why: str) -> None:
        """File the message in a run of its own, then record, log, tell and close it in one transaction."""
        storage = self._storage
        context = context_for(message, run_id=uuid.uuid4().hex)
        await storage.store.start_run(
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
        async with storage.db.transaction() as tx:
            if not await self._dead_letters.add(tx, letter):
                return
            await storage.store.add_interaction(
                conversation=message.conversation,
                category="error",
                summary=_dead_summary(letter, delivery.attempts, outcome),
                run_id=context.run_id,
            )
            await queue_notice(storage.bus, context, f"{why} {_where(letter, outcome)}", key="dead")
            await self._close_unanswered(message, told)
            await storage.store.finish_run(
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
        assistant = self._assistant
        recorder = Recorder(self._storage.store, self._storage.bus, context)
        try:
            text = await self._inputs.transcribed(message, context)
            result = await run_turn(
                model=self._filer,
                dispatcher=assistant.dispatcher,
                system=assistant.system,
                history=[],
                text=as_read(message, text, assistant.clock.tz),
                context=context,
                recorder=recorder,
                limits=assistant.limits,
            )
            await recorder.flush()
        except Exception:
            log.exception("filing dead letter %s failed", message.id)
            return Filed(None, "an internal error, which was logged")
        return filed(result.messages)

    async def _close_unanswered(self, message: InboundMessage, told: str) -> None:
        unanswered = [
            {"role": "user", "content": as_read(message, message.text, self._assistant.clock.tz)},
            {"role": "assistant", "content": [{"type": "text", "text": f"(Not answered: {told}.)"}]},
        ]
        tokens = estimate_tokens(unanswered)
        await self._storage.store.append_turn(message.conversation, message.id, unanswered, tokens=tokens)


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
