"""The person's config without its secrets: a backup holds them only when asked (``--with-secrets``).

Which settings are secrets is read off the settings model itself (every ``SecretStr``, and the MCP
servers' ``env`` and ``headers``), so a secret added to the model later is left out too. Each such
value in the TOML file is blanked where it stands (a blank secret is unset), the rest of the file
kept as the person wrote it, comments included; a file that still holds one afterwards is left out
whole rather than kept with a secret in it.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from typing import Any, get_args

from pydantic import BaseModel, SecretStr

from bot.settings import Settings

__all__ = ["secret_values", "without_secrets"]

# A path through the settings; "*" stands for any key of a table (an MCP server's name).
_Path = tuple[str, ...]


def without_secrets(text: str) -> str | None:
    """``text`` (a TOML config) with every secret's value blanked, or None when that cannot be done
    safely (the file cannot be read as TOML, or a secret would still be in it)."""
    try:
        found = secret_values(tomllib.loads(text))
    except tomllib.TOMLDecodeError:
        return None
    for value in found:
        for quoted in _spellings(value):
            text = text.replace(quoted, '""')
    try:
        left = secret_values(tomllib.loads(text))
    except tomllib.TOMLDecodeError:
        return None
    if left or any(value in text for value in found):
        return None
    return text


def secret_values(data: dict[str, Any]) -> list[str]:
    """The non-blank secret values in ``data``, a parsed config file."""
    found: list[str] = []
    for path in _secret_paths(Settings, ()):
        found.extend(value for value in _lookup(data, path) if isinstance(value, str) and value.strip())
    return found


def _spellings(value: str) -> list[str]:
    # A TOML string is written basic ("…", escapes as in JSON) or literal ('…'), perhaps multi-line.
    basic = json.dumps(value, ensure_ascii=False)
    return [f'"""{value}"""', f"'''{value}'''", basic, json.dumps(value), f"'{value}'"]


def _secret_paths(model: type[BaseModel], prefix: _Path) -> Iterator[_Path]:
    for name, field in model.model_fields.items():
        yield from _paths_of(field.annotation, (*prefix, name))


def _paths_of(annotation: Any, path: _Path) -> Iterator[_Path]:
    if annotation is SecretStr:
        yield path
        return
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield from _secret_paths(annotation, path)
        return
    args = get_args(annotation)
    if getattr(annotation, "__origin__", None) is dict and len(args) == 2:
        yield from _paths_of(args[1], (*path, "*"))
        return
    for arg in args:
        yield from _paths_of(arg, path)


def _lookup(data: Any, path: _Path) -> Iterator[Any]:
    if not path:
        yield data
        return
    if not isinstance(data, dict):
        return
    head, rest = path[0], path[1:]
    for value in data.values() if head == "*" else [data.get(head)]:
        if value is not None:
            yield from _lookup(value, rest)
