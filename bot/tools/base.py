"""The one seam every tool implements."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from bot.tools.context import ToolContext


@dataclass(frozen=True)
class Showing:
    """A success result with content blocks the model is shown beside it (an image), which the
    audit trail and history leave out."""

    result: dict[str, Any]
    blocks: list[dict[str, Any]]


class Tool(Protocol):
    """A tool the model can call: a name, a description, an input model and ``run``."""

    name: str
    description: str
    input_model: type[BaseModel]

    async def run(self, input: Any, context: ToolContext) -> dict[str, Any] | Showing:
        """Do the work and return the success result; raise ``ToolError`` to fail."""
        ...
