"""A server's tools as the Messages API takes them: names ``mcp__SERVER__TOOL`` within the API's
``^[a-zA-Z0-9_-]{1,64}$``, input schemas an object at the root without ``oneOf``/``anyOf``/``allOf``
there. What can be fixed is fixed with a warning; what cannot is skipped with one. ``vaultbot doctor``
and ``vaultbot mcp list`` show the warnings.

A tool's name is the server's word the model reads first, so it is never fixed up: one that is not a
plain name (``[A-Za-z0-9_-]``), or that reads as a built-in tool's (``vault_write`` offered as
``mcp__weather__vault_write``), is refused with a line naming the server."""

from __future__ import annotations

import copy
import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from mcp.types import Tool as ServerTool

from bot.tools import BUILT_IN_NAMES

API_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
PLAIN_NAME = re.compile(r"[A-Za-z0-9_-]+")
MAX_NAME = 64
# The API refuses these at the root of an input schema (nested, they are fine).
ROOT_REFUSED = ("oneOf", "anyOf", "allOf", "not", "if", "then", "else")


@dataclass(frozen=True)
class Offered:
    """One server tool as the model is offered it."""

    name: str  # mcp__SERVER__TOOL, as the model calls it
    original: str  # as the server calls it
    description: str
    schema: dict[str, Any]


@dataclass
class Listing:
    """A server's tools on offer, and what was fixed up or left out and why."""

    offered: list[Offered] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def offer(server: str, tools: list[ServerTool], allowed: list[str] | None) -> Listing:
    """The tools of ``server`` the model is offered: those in ``allowed`` (all when None), fixed up;
    none with a name that is not plain or that reads as a built-in tool's."""
    listing = Listing()
    taken: set[str] = set()
    shadowed = {_read_as(name) for name in BUILT_IN_NAMES}
    for tool in tools:
        if allowed is not None and tool.name not in allowed:
            continue
        if not PLAIN_NAME.fullmatch(tool.name):
            listing.warnings.append(
                f"{server}: the tool {tool.name!r} is refused: its name is not a plain name (A-Z, a-z, 0-9, _ and -)"
            )
            continue
        if _read_as(tool.name) in shadowed:
            listing.warnings.append(
                f"{server}: the tool {tool.name!r} is refused: its name is that of one of vaultbot's own tools"
            )
            continue
        name = api_name(server, tool.name)
        if name != f"mcp__{server}__{tool.name}":
            listing.warnings.append(f"{server}: the tool {tool.name!r} is offered as {name} (the API's name rules)")
        if name in taken:
            listing.warnings.append(f"{server}: the tool {tool.name!r} is left out: another tool has its name {name}")
            continue
        schema, problem = api_schema(tool.input_schema)
        if schema is None:
            listing.warnings.append(f"{server}: the tool {tool.name!r} is left out: {problem}")
            continue
        if problem:
            listing.warnings.append(f"{server}: the tool {tool.name!r}'s input schema was fixed up: {problem}")
        taken.add(name)
        description = tool.description or tool.title or f"The tool {tool.name} of the MCP server {server}."
        listing.offered.append(Offered(name, tool.name, description, schema))
    if allowed is not None:
        listed = {tool.name for tool in tools}
        listing.warnings += [
            f"{server}: offers no tool {name!r} (named in tools)" for name in allowed if name not in listed
        ]
    return listing


def _read_as(name: str) -> str:
    """A name as a reader takes it: case and the "-"/"_" difference do not tell two names apart."""
    return name.casefold().replace("-", "_")


def api_name(server: str, tool: str) -> str:
    """``mcp__SERVER__TOOL`` with characters the API refuses replaced by ``_``, and, when too long,
    shortened with a hash of the whole name so two long names stay apart."""
    name = re.sub(r"[^a-zA-Z0-9_-]", "_", f"mcp__{server}__{tool}")
    if len(name) <= MAX_NAME:
        return name
    digest = hashlib.blake2b(name.encode(), digest_size=4).hexdigest()
    return f"{name[: MAX_NAME - len(digest) - 1]}_{digest}"


def api_schema(schema: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The schema the API takes, and what was changed (or, with None, why it cannot be offered)."""
    if not isinstance(schema, dict):
        return None, "its input schema is not a JSON object"
    fixed = copy.deepcopy(schema)
    changes: list[str] = []
    if fixed.get("type", "object") != "object":
        return None, f"its input is a {fixed.get('type')!r}, and the API takes only objects"
    if "type" not in fixed:
        fixed["type"] = "object"
        changes.append('"type": "object" added')
    refused = [key for key in ROOT_REFUSED if key in fixed]
    for key in refused:
        del fixed[key]
    if refused:
        changes.append(f"{', '.join(refused)} removed at the root (the server still checks its input)")
    return fixed, "; ".join(changes) or None
