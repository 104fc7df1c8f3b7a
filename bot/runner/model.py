"""The runner's one seam to a model: ``complete(system, messages, tools, listener)``.

A client that streams tells ``listener`` the reply's text as it is written; the reply it returns is
the same either way, so a client that does not stream may ignore the listener. Content blocks are
plain dicts in the Messages API's request shape, so what the model returns can be appended to the
conversation and stored as JSON without conversion.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class Usage:
    """Tokens one or more model calls used, including prompt-cache writes and reads."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    def add(self, other: Usage) -> None:
        """Accumulate another call's usage into this one."""
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_creation_input_tokens += other.cache_creation_input_tokens
        self.cache_read_input_tokens += other.cache_read_input_tokens

    def as_dict(self) -> dict[str, int]:
        """The usage as stored in the audit trail."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
        }


@dataclass
class ModelReply:
    """One response: content blocks, why the model stopped, and what it cost."""

    content: list[dict[str, Any]]
    stop_reason: str
    usage: Usage = field(default_factory=Usage)
    model: str = ""

    @property
    def text(self) -> str:
        """The reply's text blocks joined."""
        return "\n\n".join(b["text"] for b in self.content if b.get("type") == "text" and b.get("text"))

    @property
    def tool_uses(self) -> list[dict[str, Any]]:
        """The tool calls the model asked for, in order."""
        return [b for b in self.content if b.get("type") == "tool_use"]


class TextListener(Protocol):
    """Hears a reply as it is written. Called on the event loop; must return at once."""

    def text(self, delta: str) -> None:
        """More of the reply's text (text blocks after the first come with a blank line before them,
        so the deltas of a reply add up to :attr:`ModelReply.text`)."""
        ...

    def tool_call(self, name: str) -> None:
        """The reply turned to a tool call: the text before it is not the run's final text."""
        ...


class ModelClient(Protocol):
    """Anything that can answer a conversation with tools."""

    name: str

    async def complete(
        self,
        *,
        system: list[dict[str, Any]],
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        listener: TextListener | None = None,
    ) -> ModelReply:
        """Answer once; raise ``ModelUnavailable`` or ``ModelRejected`` when it cannot."""
        ...
