"""One line for a bad setting: which variable (or which file and key) and what it should be.

``VAULTBOT_TELEGRAM__ALLOWED_USERS: expected a JSON list of numeric user ids, got 'not-a-list'``.
The value is shown so the user sees what was read, except for secrets, whose value never appears.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any, get_origin

from dotenv import dotenv_values
from pydantic import BaseModel, SecretStr, ValidationError
from pydantic.fields import FieldInfo

__all__ = ["describe_parse_error", "describe_validation_error"]

PREFIX = "VAULTBOT_"
_SHOWN_AT_MOST = 60

# What a field needs, where saying so beats the generic wording of its type.
_EXPECTED = {
    ("telegram", "allowed_users"): "a JSON list of numeric user ids",
    ("budget", "daily_usd"): "an amount in US dollars above 0",
}


def describe_validation_error(exc: ValidationError, settings_cls: type[BaseModel], toml: Path) -> str:
    """The first problem of ``exc`` as one line naming where the value came from."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(p for p in err["loc"] if not isinstance(p, int))
    more = f" (and {exc.error_count() - 1} more problem(s))" if exc.error_count() > 1 else ""
    field = _field(settings_cls, loc)
    if field is None or isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
        if err["type"] == "value_error":  # a check across a section's keys names its variables itself
            return f"{_message(err)}{more}"
        label, raw = _label(loc, toml)
        return f"{label}: {_message(err)}, got {_show(raw if raw is not None else err.get('input'))}{more}"
    label, raw = _label(loc, toml)
    expected = _EXPECTED.get(loc[-2:]) if len(loc) >= 2 else None
    what = f"expected {expected}" if expected else _message(err)
    if _is_secret(field):
        return f"{label}: {what} (the value is not shown: it is a secret){more}"
    shown = raw if raw is not None else err.get("input")
    return f"{label}: {what}, got {_show(shown)}{more}"


def describe_parse_error(section: str, settings_cls: type[BaseModel]) -> str:
    """pydantic-settings names only the section whose variable is not JSON; find the variable."""
    values = _environment()
    section_var = f"{PREFIX}{section.upper()}"
    if section_var in values and not _is_json(values[section_var]):
        return f"{section_var}: expected a JSON object of the section's settings, got {_show(values[section_var])}"
    section_field = settings_cls.model_fields.get(section)
    section_model = section_field.annotation if section_field else None
    fields = (
        section_model.model_fields if isinstance(section_model, type) and issubclass(section_model, BaseModel) else {}
    )
    for name, value in values.items():
        key = name.removeprefix(section_var + "__").lower()
        # Only lists and tables are read as JSON; a plain text value such as a URL never is.
        if not name.startswith(section_var + "__") or key not in fields or not _is_complex(fields[key]):
            continue
        if not _is_json(value):
            return f"{name}: expected {_EXPECTED.get((section, key), 'a JSON value')}, got {_show(value)}"
    return f"{section_var}__*: a value in this section is not valid JSON"


def _message(err: Any) -> str:
    kind, ctx = err["type"], err.get("ctx") or {}
    bounds = {
        "greater_than_equal": ("a number of at least", "ge"),
        "greater_than": ("a number above", "gt"),
        "less_than_equal": ("a number of at most", "le"),
        "less_than": ("a number below", "lt"),
    }
    if kind in bounds:
        words, key = bounds[kind]
        return f"expected {words} {ctx[key]}"
    simple = {
        "int_parsing": "a whole number",
        "int_type": "a whole number",
        "int_from_float": "a whole number",
        "float_parsing": "a number",
        "float_type": "a number",
        "bool_parsing": "true or false",
        "bool_type": "true or false",
        "string_too_short": "some text",
        "string_type": "text",
        "list_type": "a JSON list",
        "model_type": "a table of settings",
        "dict_type": "a table of settings",
        "json_invalid": "valid JSON",
        "path_type": "a file or folder path",
    }
    if kind in simple:
        return f"expected {simple[kind]}"
    if kind == "literal_error":
        return f"expected one of {ctx['expected']}"
    if kind == "value_error":
        return str(ctx.get("error", err["msg"]))
    return str(err["msg"])


def _field(settings_cls: type[BaseModel], loc: tuple[Any, ...]) -> FieldInfo | None:
    model: Any = settings_cls
    field: FieldInfo | None = None
    for part in loc:
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return field
        # The SDK's variables are validated under their alias (ANTHROPIC_API_KEY for anthropic_api_key).
        field = model.model_fields.get(str(part)) or model.model_fields.get(str(part).lower())
        if field is None:
            return None
        model = field.annotation
    return field


def _is_complex(field: FieldInfo) -> bool:
    kind = get_origin(field.annotation) or field.annotation
    return kind in (list, dict, set, tuple) or isinstance(kind, type) and issubclass(kind, BaseModel)


def _is_secret(field: FieldInfo) -> bool:
    return "SecretStr" in str(field.annotation) or field.annotation is SecretStr


def _label(loc: tuple[Any, ...], toml: Path) -> tuple[str, Any]:
    """Where the value at ``loc`` was read (variable, or file and key) and its raw value."""
    parts = [str(p) for p in loc]
    values = _environment()
    if parts and parts[0].upper().startswith("ANTHROPIC_"):  # the SDK's own variables, without our prefix
        names = [parts[0].upper()]
    else:
        names = [PREFIX + "__".join(p.upper() for p in parts[:n]) for n in range(len(parts), 0, -1)]
    for name in names:
        if name in values:
            return name, values[name] if name == names[0] else None
    found = _toml_value(toml, parts)
    if found is not _MISSING:
        key = f"[{parts[0]}] {'.'.join(parts[1:])}" if len(parts) > 1 else parts[0].lower()
        return f"{toml} {key}", found
    return names[0], None


_MISSING = object()


def _toml_value(toml: Path, parts: list[str]) -> Any:
    try:
        data: Any = tomllib.loads(toml.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return _MISSING
    for part in parts:
        key = next((k for k in (part, part.lower()) if isinstance(data, dict) and k in data), None)
        if key is None:
            return _MISSING
        data = data[key]
    return data


def _environment() -> dict[str, str]:
    """The variables vaultbot reads, by upper-case name: ``.env`` first, the environment over it."""
    values: dict[str, str] = {}
    if Path(".env").is_file():
        values.update({k.upper(): v for k, v in dotenv_values(".env").items() if v is not None})
    values.update({k.upper(): v for k, v in os.environ.items()})
    return values


def _is_json(value: str) -> bool:
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_AT_MOST else text[: _SHOWN_AT_MOST - 1] + "…"
