"""The one seam every tool implements."""

from __future__ import annotations

from typing import Any, Protocol

from pydantic import BaseModel

from bot.tools.context import ToolContext


class Tool(Protocol):
    """A tool the model can call: a name, a description, an input model and ``run``."""

    name: str
    description: str
    input_model: type[BaseModel]

    async def run(self, input: Any, context: ToolContext) -> dict[str, Any]:
        """Do the work and return the success result; raise ``ToolError`` to fail."""
        ...
