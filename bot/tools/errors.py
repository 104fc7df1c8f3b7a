"""Tool failures. Inside a tool they are exceptions; at the dispatcher they become result objects.

``ToolError`` is the only exception a tool raises on purpose. ``error_type`` names the kind of
failure for the model and for error tracking; ``retryable`` says whether trying the same call
again can help (a locked database) or cannot (a path outside the vault). ``untrusted`` names where
the message's words came from when they are someone else's (an MCP server's own error text).
"""

from __future__ import annotations

from typing import Any


class ToolError(Exception):
    """A tool could not do what was asked; the message is a sentence the model can act on."""

    def __init__(self, message: str, *, error_type: str, retryable: bool = False, untrusted: str | None = None) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.retryable = retryable
        self.untrusted = untrusted

    def result(self) -> dict[str, Any]:
        """The failure as the result object the model sees."""
        return failure(str(self), self.error_type, retryable=self.retryable)


def failure(message: str, error_type: str, *, retryable: bool = False) -> dict[str, Any]:
    """The one shape of a failed tool call."""
    return {"success": False, "error": message, "error_type": error_type, "retryable": retryable}
