"""MCP: the tools of any Model Context Protocol server, offered as ``mcp__SERVER__TOOL`` through the
same dispatcher, guards and audit trail as the built-in tools."""

from __future__ import annotations

from bot.mcp.link import ServerLink
from bot.mcp.servers import McpServers, McpTool

__all__ = ["McpServers", "McpTool", "ServerLink"]
