"""Routes a model's tool call to its tool, and turns every failure into a result object.

Nothing a tool does can raise into the model loop: an unknown tool, invalid input, a
``ToolError`` and an unexpected exception all come back as
``{"success": false, "error", "error_type", "retryable"}`` with ``is_error`` set.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from bot.tools.base import Showing, Tool
from bot.tools.context import ToolContext
from bot.tools.errors import ToolError, failure

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call produced; ``shown``: content blocks the model sees beside the result."""

    result: dict[str, Any]
    is_error: bool
    shown: list[dict[str, Any]] = field(default_factory=list)


class Dispatcher:
    """Holds the tools by name; hands the model their definitions and runs its calls."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._definitions = _definitions(self._tools.values())

    @property
    def names(self) -> list[str]:
        """The tool names, in definition order."""
        return list(self._tools)

    def definitions(self) -> list[dict[str, Any]]:
        """Tool definitions for the Messages API; the last is marked for prompt caching."""
        return self._definitions

    async def call(self, name: str, raw_input: Any, context: ToolContext) -> ToolOutcome:
        """Run one tool call; never raises except on cancellation."""
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools)
            return _failed(f"There is no tool named {name!r}. The tools are: {known}.", "unknown_tool")
        try:
            parsed = tool.input_model.model_validate(raw_input if raw_input is not None else {})
        except ValidationError as exc:
            return _failed(f"Invalid input for {name}: {_explain(exc)}", "invalid_input")
        try:
            done = await tool.run(parsed, context)
            if isinstance(done, Showing):
                return ToolOutcome(done.result, is_error=False, shown=done.blocks)
            return ToolOutcome(done, is_error=False)
        except ToolError as exc:
            return ToolOutcome(exc.result(), is_error=True)
        except Exception as exc:  # a bug in a tool must not end the run
            log.exception("! tool %s crashed run=%s", name, context.run_id)
            return _failed(
                f"{name} failed unexpectedly ({type(exc).__name__}); the failure was logged.",
                "internal_error",
                retryable=True,
            )


def _failed(message: str, error_type: str, *, retryable: bool = False) -> ToolOutcome:
    return ToolOutcome(failure(message, error_type, retryable=retryable), is_error=True)


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False, include_input=False)[:5]:
        field = ".".join(str(p) for p in err["loc"]) or "input"
        parts.append(f"{field}: {err['msg']}")
    return "; ".join(parts) + "."


def _definitions(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    defs = []
    for tool in tools:
        schema = tool.input_model.model_json_schema()
        schema.pop("title", None)
        schema.pop("description", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        defs.append({"name": tool.name, "description": tool.description, "input_schema": schema})
    if defs:
        # Caching the last definition caches every tool before it (and the system prompt before them).
        defs[-1] = {**defs[-1], "cache_control": {"type": "ephemeral"}}
    return defs
