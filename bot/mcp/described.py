"""A server's words in its tool list (descriptions, titles, comments at any depth of an input schema),
each inside the label of someone else's words (``bot.consent``), so the model reads them as the
server's and never as orders.

Values the model must send exactly as the server wrote them (``enum``, ``const``, ``default``,
``examples``, property names) stay as they are: a label would change what the server accepts. They
are the server's words all the same, and a run they are offered to is tainted by them unless the
server is trusted (``McpServers.sources``).
"""

from __future__ import annotations

from typing import Any

from bot.consent import Untrusted, label

# Keywords whose string value is free text, not part of what the input must be.
TEXT = frozenset({"description", "title", "$comment"})
# Keywords whose value is a value the input may take, never read as a schema.
VALUES = frozenset({"enum", "const", "default", "examples"})
# Keywords whose value maps names (chosen by the server) to schemas.
NAMED = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


def labelled_schema(schema: dict[str, Any], source: str) -> dict[str, Any]:
    """A copy of ``schema`` with each free text in it labelled as ``source``'s words."""
    return {key: _value(key, value, source) for key, value in schema.items()}


def _value(key: str, value: Any, source: str) -> Any:
    if key in TEXT and isinstance(value, str):
        return label(Untrusted(value, source))
    if key in VALUES:
        return value
    if key in NAMED and isinstance(value, dict):
        return {name: _schema(inner, source) for name, inner in value.items()}
    return _schema(value, source)


def _schema(value: Any, source: str) -> Any:
    if isinstance(value, dict):
        return labelled_schema(value, source)
    if isinstance(value, list):
        return [_schema(item, source) for item in value]
    return value
