"""One line for a bad setting: which variable (or which file and key) and what it should be.

``VAULTBOT_TELEGRAM__ALLOWED_USERS: expected a JSON list of numeric user ids, got 'not-a-list'``.
The value is shown so the user sees what was read, except for secrets, whose value never appears.

And one line for a setting vaultbot does not have, which pydantic-settings passes over in silence:
``unknown setting VAULTBOT_VAULT__PATHH; did you mean VAULTBOT_VAULT__PATH?``.
"""

from __future__ import annotations

import difflib
import json
import os
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_origin

from dotenv import dotenv_values
from pydantic import AliasChoices, BaseModel, SecretStr, ValidationError
from pydantic.fields import FieldInfo

__all__ = ["describe_parse_error", "describe_validation_error", "unknown_settings"]

PREFIX = "VAULTBOT_"
# Read by vaultbot itself, not by the settings model.
_OWN_VARIABLES = {f"{PREFIX}CONFIG"}
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
    return {**_dotenv(), **{k.upper(): v for k, v in os.environ.items()}}


def _dotenv() -> dict[str, str]:
    if not Path(".env").is_file():
        return {}
    return {k.upper(): v for k, v in dotenv_values(".env").items() if v is not None}


def unknown_settings(settings_cls: type[BaseModel], toml: Path) -> list[str]:
    """A line for each ``VAULTBOT_`` variable (environment or ``.env``) and each key or section of
    ``toml`` that sets nothing, naming the closest setting there is."""
    names = dict(_variables(settings_cls, PREFIX))
    names.update(dict.fromkeys(_OWN_VARIABLES, False))
    # The SDK's own names (ANTHROPIC_API_KEY) are the ones to suggest for its settings.
    sdk = [_alias(field) for field in settings_cls.model_fields.values() if field.validation_alias is not None]
    environment = {k.upper() for k in os.environ}
    found: list[str] = []
    for name in dict.fromkeys([*_dotenv(), *sorted(environment)]):
        if name.startswith(PREFIX) and not _sets_something(name, names):
            where = "" if name in environment else " in .env"
            found.append(f"unknown setting {name}{where}{_closest(name, [*names, *sdk])}")
    found.extend(_unknown_in_toml(settings_cls, toml))
    return found


def _alias(field: FieldInfo) -> str:
    alias = field.validation_alias
    first = alias.choices[0] if isinstance(alias, AliasChoices) else alias
    return str(first).upper()


def _variables(model: type[BaseModel], prefix: str) -> Iterator[tuple[str, bool]]:
    """Every variable that sets something under ``model``, with whether names below it are free
    (a table or list of the user's own keys, such as a JSON object's)."""
    for name, field in model.model_fields.items():
        variable = prefix + name.upper()
        kind = field.annotation
        if isinstance(kind, type) and issubclass(kind, BaseModel):
            yield variable, False
            yield from _variables(kind, variable + "__")
        else:
            yield variable, _is_complex(field)


def _sets_something(name: str, names: dict[str, bool]) -> bool:
    if name in names:
        return True
    return any(free and name.startswith(known + "__") for known, free in names.items())


def _closest(name: str, candidates: list[str], what: str = "setting") -> str:
    """ "; did you mean X?" for the candidate most like ``name``, compared without the prefix they
    share (it would make every pair look alike)."""
    bare = {candidate.removeprefix(PREFIX): candidate for candidate in candidates}
    match = difflib.get_close_matches(name.removeprefix(PREFIX), list(bare), n=1, cutoff=0.6)
    return f"; did you mean {bare[match[0]]}?" if match else f" (vaultbot has no such {what})"


def _unknown_in_toml(settings_cls: type[BaseModel], toml: Path) -> list[str]:
    try:
        data: Any = tomllib.loads(toml.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # a file that cannot be read is refused when settings load
        return []
    found: list[str] = []
    fields = settings_cls.model_fields
    for key, value in data.items():
        field = fields.get(key) or fields.get(key.lower())
        if field is None:
            known = [f"[{k}]" if _is_section(f) else k for k, f in fields.items()]
            shown = f"[{key}]" if isinstance(value, dict) else key
            what = "section" if isinstance(value, dict) else "setting"
            found.append(f"unknown {what} {toml} {shown}{_closest(shown, known, what)}")
        elif _is_section(field) and isinstance(value, dict):
            section: Any = field.annotation
            for inner in value:
                if inner not in section.model_fields and inner.lower() not in section.model_fields:
                    known = [f"[{key}] {k}" for k in section.model_fields]
                    found.append(f"unknown setting {toml} [{key}] {inner}{_closest(f'[{key}] {inner}', known)}")
    return found


def _is_section(field: FieldInfo) -> bool:
    return isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)


def _is_json(value: str) -> bool:
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_AT_MOST else text[: _SHOWN_AT_MOST - 1] + "…"
