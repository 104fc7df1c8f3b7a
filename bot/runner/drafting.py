"""What of a run's text may reach the user, passed on to the run's draft as it is written."""

from __future__ import annotations

from bot.streaming import DraftWriter
from bot.tools import ToolContext


class ReplyDraft:
    """The run's :class:`~bot.runner.model.TextListener`: forwards text that may become its reply.

    Only a run's final text is sent, and only while it has not called ``send_message`` (the reply
    rules), so text written after a ``send_message`` is never drafted; text the model follows with
    a tool call is marked as not the reply by the draft itself.
    """

    def __init__(self, writer: DraftWriter, context: ToolContext) -> None:
        self._writer = writer
        self._context = context

    def text(self, delta: str) -> None:
        """Draft ``delta`` unless the run's final text will not be sent."""
        if self._context.sent == 0:
            self._writer.text(delta)

    def tool_call(self, name: str) -> None:
        """The text so far is not the reply."""
        self._writer.tool_call(name)
