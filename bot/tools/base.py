"""The one seam every tool implements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from bot.tools.context import ToolContext


@dataclass(frozen=True)
class ContentResult:
    """A success result with content blocks the model sees beside it (images): ``result`` is what
    the audit trail keeps, ``blocks`` go only to the model. ``untrusted`` names where the result's words
    came from when someone other than the person wrote them ("web page", "MCP server files"): the model
    then reads them labelled as such (``bot.consent``)."""

    result: dict[str, Any]
    blocks: list[dict[str, Any]] = field(default_factory=list)
    untrusted: str | None = None


class Tool(Protocol):
    """A tool the model can call: a name, a description, an input model and ``run``."""

    name: str
    description: str
    input_model: type[BaseModel]

    async def run(self, input: Any, context: ToolContext) -> dict[str, Any] | ContentResult:
        """Do the work and return the success result; raise ``ToolError`` to fail."""
        ...
