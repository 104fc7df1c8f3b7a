"""Routes a model's tool call to its tool, and turns every failure into a result object.

Nothing a tool does can raise into the model loop: an unknown tool, invalid input, a
``ToolError`` and an unexpected exception all come back as
``{"success": false, "error", "error_type", "retryable"}`` with ``is_error`` set.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from bot.tools.base import ContentResult, Tool
from bot.tools.context import ToolContext
from bot.tools.errors import ToolError, failure

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ToolOutcome:
    """What one tool call produced: ``result`` for the audit trail and the model, and ``blocks``
    (images) for the model only; ``untrusted`` names where the result's words came from when the person
    did not write them (``ContentResult.untrusted``)."""

    result: dict[str, Any]
    is_error: bool
    blocks: tuple[dict[str, Any], ...] = ()
    untrusted: str | None = None


@dataclass(frozen=True)
class Checked:
    """A call whose tool exists and whose input is valid, ready to run (:meth:`Dispatcher.run`)."""

    tool: Tool
    input: BaseModel


class ToolSource(Protocol):
    """Tools that come and go while the bot runs (an MCP server's, once it has started)."""

    def current(self) -> Mapping[str, Tool]:
        """The tools on offer now, by name; the same mapping object until they change."""
        ...

    def sources(self) -> frozenset[str]:
        """Where the words of the tools on offer (descriptions, schemas) come from when they are someone
        else's that taint a run (``bot.consent``); empty when none are."""
        ...


class Dispatcher:
    """Holds the tools by name; hands the model their definitions and runs its calls.

    ``source`` adds tools that may change between runs; each run is offered those on offer when it starts.
    """

    def __init__(self, tools: Iterable[Tool], source: ToolSource | None = None) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self._source = source
        self._seen: Mapping[str, Tool] | None = None
        self._definitions = _definitions(self._tools.values())

    @property
    def names(self) -> list[str]:
        """The tool names, in definition order."""
        return list(self._all())

    def definitions(self) -> list[dict[str, Any]]:
        """Tool definitions for the Messages API; the last is marked for prompt caching."""
        current = self._source.current() if self._source is not None else None
        if current is not None and current is not self._seen:
            self._seen = current
            self._definitions = _definitions([*self._tools.values(), *current.values()])
        return self._definitions

    def sources(self) -> frozenset[str]:
        """Where the offered tools' words come from when someone else wrote them (``ToolSource.sources``):
        a run given these definitions holds those words."""
        return self._source.sources() if self._source is not None else frozenset()

    def _all(self) -> Mapping[str, Tool]:
        return self._tools if self._source is None else {**self._tools, **self._source.current()}

    async def call(self, name: str, raw_input: Any, context: ToolContext) -> ToolOutcome:
        """Run one tool call; raises only as :meth:`run` does."""
        checked = self.check(name, raw_input)
        if isinstance(checked, ToolOutcome):
            return checked
        return await self.run(checked, context)

    def check(self, name: str, raw_input: Any) -> Checked | ToolOutcome:
        """The call ready to run, or the failure of an unknown tool or invalid input."""
        tools = self._all()
        tool = tools.get(name)
        if tool is None:
            known = ", ".join(tools)
            return _failed(f"There is no tool named {name!r}. The tools are: {known}.", "unknown_tool")
        try:
            return Checked(tool, tool.input_model.model_validate(raw_input if raw_input is not None else {}))
        except ValidationError as exc:
            return _failed(f"Invalid input for {name}: {_explain(exc)}", "invalid_input")

    async def run(self, checked: Checked, context: ToolContext) -> ToolOutcome:
        """Run a checked call; never raises except on cancellation, or when the run's message was
        claimed again before a call that reaches outside the store (``ToolContext.fence``)."""
        name = checked.tool.name
        if context.fence is not None and reaches_out(name):
            # A handler paused past its lease stops here: the claim holding the message makes this call.
            await context.fence()
        try:
            done = await checked.tool.run(checked.input, context)
            if isinstance(done, ContentResult):
                return ToolOutcome(done.result, is_error=False, blocks=tuple(done.blocks), untrusted=done.untrusted)
            return ToolOutcome(done, is_error=False)
        except ToolError as exc:
            return ToolOutcome(exc.result(), is_error=True, untrusted=exc.untrusted)
        except Exception as exc:  # a bug in a tool must not end the run
            log.exception("! tool %s crashed run=%s", name, context.run_id)
            return _failed(
                f"{name} failed unexpectedly ({type(exc).__name__}); the failure was logged.",
                "internal_error",
                retryable=True,
            )


def reaches_out(name: str) -> bool:
    """Whether a tool's effects reach outside the store (an MCP server, a web site): made a second time
    by a claim that lost its lease, such a call is a second effect that no rollback takes back."""
    return name.startswith("mcp__") or name == "clip_link"


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
