"""What ``vaultbot doctor`` and ``vaultbot mcp list`` say about the MCP servers: each is started as
the bot would start it, asked for its tools, and stopped."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from bot.mcp.link import ServerLink
from bot.mcp.secrets import MaskingFilter
from bot.settings import Settings


@dataclass(frozen=True)
class ServerReport:
    """One server: whether it started, why not, and the tool names the model sees."""

    name: str
    transport: str
    ok: bool
    state: str
    reason: str | None
    tools: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def describe(self) -> str:
        """One line for doctor."""
        if not self.ok:
            return f"{self.transport}, {self.state}: {self.reason}"
        names = ", ".join(self.tools) or "no tools"
        warned = f"; warnings: {'; '.join(self.warnings)}" if self.warnings else ""
        return f"{self.transport}, {self.state}, {len(self.tools)} tool(s): {names}{warned}"

    def as_json(self) -> dict[str, Any]:
        """For ``vaultbot mcp list --json``."""
        return {
            "server": self.name,
            "transport": self.transport,
            "state": self.state,
            "reason": self.reason,
            "tools": self.tools,
            "warnings": self.warnings,
        }


async def report(settings: Settings) -> list[ServerReport]:
    """Start every configured server at once, list its tools, stop it."""
    links = [ServerLink(name, config) for name, config in settings.mcp.servers.items()]
    masking = MaskingFilter([link.secrets for link in links])
    masking.attach()
    try:
        return list(await asyncio.gather(*(_probe(link) for link in links)))
    finally:
        masking.detach()


async def _probe(link: ServerLink) -> ServerReport:
    try:
        ok = await link.start()
        state, reason = link.state, link.reason
    finally:
        await link.stop()
    return ServerReport(
        name=link.name,
        transport=link.transport,
        ok=ok,
        state=state,
        reason=reason,
        tools=[tool.name for tool in link.listing.offered],
        warnings=link.listing.warnings,
    )
