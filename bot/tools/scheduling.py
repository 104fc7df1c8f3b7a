"""``schedule_message``, ``list_scheduled`` and ``cancel_scheduled``: reminders the model sets for the user."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bot.reminders import ReminderBook, ReminderError, Who
from bot.tools.context import ToolContext
from bot.tools.errors import ToolError
from bot.tools.schemas import CancelScheduledInput, ListScheduledInput, ScheduleMessageInput


def _who(context: ToolContext) -> Who:
    # Where a reminder goes is the run's own recipient, never something from the model's input.
    return Who(conversation=context.conversation, channel=context.channel, recipient=context.recipient)


class ScheduleMessage:
    """Schedule a message (or a task for the model) at a time, once or repeating."""

    name = "schedule_message"
    description = (
        "Schedule a message to the user at a later time, once or repeating (an RRULE). With run_model true the "
        "text is handled as a message from the user at that time (e.g. 'list my open tasks'). Each user message "
        "starts with the local time it was sent, like [Mon 2026-11-23 14:05 +01:00]: use the latest to turn "
        "'tomorrow at 9' into 'at'. The result's 'next' is the first occurrence in the user's time: confirm it "
        "in words."
    )
    input_model = ScheduleMessageInput

    def __init__(self, book: ReminderBook, on_scheduled: Callable[[], None] = lambda: None) -> None:
        self._book = book
        self._on_scheduled = on_scheduled

    async def run(self, input: ScheduleMessageInput, context: ToolContext) -> dict[str, Any]:
        """Store the reminder idempotently and return its id and next occurrence."""
        try:
            reminder = await self._book.schedule(
                _who(context),
                text=input.text,
                at=input.at,
                repeat=input.repeat,
                run_model=input.run_model,
                request_key=context.next_schedule_key(),
                sources=context.sources,
            )
        except ReminderError as exc:
            raise ToolError(str(exc), error_type=exc.error_type) from None
        self._on_scheduled()
        return {"success": True, "id": reminder.id, "next": reminder.describe()["next"]}


class ListScheduled:
    """List this conversation's pending reminders."""

    name = "list_scheduled"
    description = "List the user's pending scheduled messages: id, text, next occurrence, repeat rule, run_model."
    input_model = ListScheduledInput

    def __init__(self, book: ReminderBook) -> None:
        self._book = book

    async def run(self, input: ListScheduledInput, context: ToolContext) -> dict[str, Any]:
        """The pending reminders, soonest first."""
        return {"success": True, "scheduled": [r.describe() for r in await self._book.pending(context.conversation)]}


class CancelScheduled:
    """Cancel one of this conversation's reminders."""

    name = "cancel_scheduled"
    description = "Cancel a pending scheduled message by its id (from schedule_message or list_scheduled)."
    input_model = CancelScheduledInput

    def __init__(self, book: ReminderBook) -> None:
        self._book = book

    async def run(self, input: CancelScheduledInput, context: ToolContext) -> dict[str, Any]:
        """Cancel it; an unknown, finished or someone else's id is ``not_found``."""
        try:
            await self._book.cancel(context.conversation, input.id)
        except ReminderError as exc:
            raise ToolError(str(exc), error_type=exc.error_type) from None
        return {"success": True}
