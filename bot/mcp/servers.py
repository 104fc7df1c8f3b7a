"""Every configured MCP server's tools, offered through the dispatcher beside the built-in ones.

Servers start with vaultbot (``start``, all at once, each within its ``timeout``), so the first
message already has their tools; they stop with it (``close``). A server that could not start
offers nothing until it does: each run's tool list tries it again in the background once its
restart delay has passed, and its tools join the runs that start after it is up.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict

from bot.consent import Untrusted, label
from bot.mcp.content import source
from bot.mcp.described import labelled_schema
from bot.mcp.link import ServerLink
from bot.mcp.naming import Offered
from bot.mcp.secrets import MaskingFilter
from bot.settings import McpServerSettings
from bot.tools import ContentResult, ToolContext


class ServerInput(BaseModel):
    """A server tool's input: whatever the model sends, checked by the server against its own schema."""

    model_config = ConfigDict(extra="allow")
    server_schema: ClassVar[dict[str, Any]] = {}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        """The server's own input schema (fixed up for the API), as the model is offered it."""
        return copy.deepcopy(cls.server_schema)


class McpTool:
    """One server tool, called through the server's shared session."""

    def __init__(self, link: ServerLink, offered: Offered) -> None:
        self.name = offered.name
        # The server's words, labelled as such (a run they are offered to is tainted by them unless the
        # server is trusted: ``McpServers.sources``).
        self.description = label(Untrusted(offered.description, f"tool description of {source(link.name)}"))
        schema = labelled_schema(offered.schema, f"input schema of {source(link.name)}")
        self.words = None if link.config.trusted else f"tool list of {source(link.name)}"
        self.input_model: type[BaseModel] = type(
            f"{offered.name}_input", (ServerInput,), {"server_schema": schema, "__module__": __name__}
        )
        self._link = link
        self._original = offered.original

    async def run(self, input: Any, context: ToolContext) -> ContentResult:
        """Call the tool on its server. Not exactly-once: a re-run after a crash calls it again."""
        return await self._link.call(self._original, input.model_dump())


class McpServers:
    """The configured servers; a ``ToolSource`` for the dispatcher."""

    def __init__(self, servers: Mapping[str, McpServerSettings]) -> None:
        self.links = [ServerLink(name, config, on_change=self._changed) for name, config in servers.items()]
        self._masking = MaskingFilter([link.secrets for link in self.links])
        self._masking.attach()
        self._current: dict[str, McpTool] | None = None
        self._reviving: set[asyncio.Task[bool]] = set()

    async def start(self) -> None:
        """Start every server at once; those that fail say why in their ``reason``."""
        await asyncio.gather(*(link.start() for link in self.links))

    def current(self) -> Mapping[str, McpTool]:
        """The tools on offer, by name (the same mapping until a server's tools change)."""
        for link in self.links:
            if link.state == "failed" and not link.listing.offered and link.retry_in() == 0:
                self._revive(link)
        if self._current is None:
            self._current = {tool.name: McpTool(link, tool) for link in self.links for tool in link.listing.offered}
        return self._current

    def sources(self) -> frozenset[str]:
        """Where the words of the tools on offer come from, for each server not marked ``trusted``: the
        model reads their descriptions and schemas, so they taint every run they are offered to."""
        return frozenset(tool.words for tool in self.current().values() if tool.words is not None)

    async def close(self) -> None:
        """Stop every server and wait for them to exit."""
        for task in self._reviving:
            task.cancel()
        await asyncio.gather(*self._reviving, return_exceptions=True)
        await asyncio.gather(*(link.stop() for link in self.links))
        self._masking.detach()

    def _revive(self, link: ServerLink) -> None:
        if any(task.get_name() == link.name for task in self._reviving):
            return
        task = asyncio.get_running_loop().create_task(link.start(), name=link.name)
        self._reviving.add(task)
        task.add_done_callback(self._reviving.discard)

    def _changed(self) -> None:
        self._current = None
