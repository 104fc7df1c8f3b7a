"""The review page's one write: the person's answer to a waiting question, put on the bus as a channel
puts a tap on a button, so the runner decides it through the same path (``bot.runner.asking``): once,
whichever answer comes first, the others told it was decided.

Views never write: the page's database connection is read-only, and this narrow writer publishes one
kind of message only. A page served without it (``vaultbot review`` on its own) shows the questions
and says to answer them in the chat.
"""

from __future__ import annotations

from typing import Any, Literal

from bot.bus import INBOUND, Answer, Bus, InboundMessage, Sender

__all__ = ["Answers"]


class Answers:
    """Publishes answers to questions for consent, as the person of each question's conversation."""

    def __init__(self, bus: Bus) -> None:
        self._bus = bus

    async def answer(self, question: dict[str, Any], choice: Literal["allow", "deny"]) -> None:
        """Put ``choice`` for ``question`` (as ``StoreReader.question`` reads it) on the bus. The session
        proved the page's person; an answer is one per question (a second post is dropped here, and
        the runner decides a question once whatever comes)."""
        message = InboundMessage(
            channel=question["channel"],
            conversation=question["conversation"],
            sender=Sender(id=question["person"], name="the review page"),
            text="",
            answer=Answer(question=question["id"], choice=choice),
            reply_to=question["recipient"],
            meta={"via": "review page"},
        )
        await self._bus.publish(
            INBOUND, message, conversation=message.conversation, dedupe_key=f"review:{question['id']}"
        )
