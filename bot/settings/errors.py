"""One line for a bad setting: which variable (or which file and key) and what it should be.

``VAULTBOT_TELEGRAM__ALLOWED_USERS: expected a JSON list of numeric user ids, got 'not-a-list'``.
The value is shown so the user sees what was read, except where it is or may hold a secret: a key,
token or password, a table that holds one (an MCP server with its ``env`` or ``headers``, a section
given as JSON with its token), and the value of a key vaultbot does not know (a misspelt ``env``).
There the line says what is wrong (for JSON, where it stops being JSON) without the value.

A place inside a variable's JSON is named after the variable (``VAULTBOT_MCP__SERVERS (server
'files', timeout)``); an unknown key of a table that takes only its own keys is named with the
closest one it has.

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
from types import UnionType
from typing import Annotated, Any, NamedTuple, Union, get_args, get_origin

from dotenv import dotenv_values
from pydantic import AliasChoices, BaseModel, SecretStr, ValidationError
from pydantic.fields import FieldInfo

__all__ = ["describe_parse_error", "describe_validation_error", "unknown_settings"]

PREFIX = "VAULTBOT_"
# Read by vaultbot itself, not by the settings model.
_OWN_VARIABLES = {f"{PREFIX}CONFIG"}
# The SDK's own variables vaultbot takes as the SDK names them, and others the SDK reads itself.
_SDK_PREFIX = "ANTHROPIC_"
_SDK_OWN = {"ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_LOG"}
_SHOWN_AT_MOST = 60

# What a field needs, where saying so beats the generic wording of its type.
_EXPECTED = {
    ("telegram", "allowed_users"): "a JSON list of numeric user ids",
    ("budget", "daily_usd"): "an amount in US dollars above 0",
    ("mcp", "servers"): "a JSON object of MCP servers by name",
    ("email", "allowed_senders"): "a JSON list of e-mail addresses",
}


def describe_validation_error(exc: ValidationError, settings_cls: type[BaseModel], toml: Path) -> str:
    """The first problem of ``exc`` as one line naming where the value came from."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(p for p in err["loc"] if not isinstance(p, int))
    more = f" (and {exc.error_count() - 1} more problem(s))" if exc.error_count() > 1 else ""
    kind = err["type"]
    if kind == "extra_forbidden":  # a key the table does not have: name it and the closest one it has
        table, _ = _walk(settings_cls, loc[:-1])
        where = _where(settings_cls, loc[:-1], toml, table=True)
        return f"{where.label}: unknown key {loc[-1]!r}{_closest_key(str(loc[-1]), table)}{more}"
    annotation, _ = _walk(settings_cls, loc)
    where = _where(settings_cls, loc, toml, table=_is_model(_bare(annotation)))
    if kind == "value_error" and len(loc) <= 1 and _is_model(annotation):
        return f"{_message(err)}{more}"  # a check across a section's keys names its variables itself
    expected = _EXPECTED.get(loc[-2:]) if len(loc) >= 2 else None
    what = f"expected {expected}" if expected and kind != "value_error" else _message(err)
    hidden = _hidden(annotation)
    if hidden:
        # A variable's text that should have been JSON: say where it stops being JSON instead.
        problem = _json_problem(where.value) if where.variable and kind in _JSON_KINDS else ""
        return f"{where.label}: {what}{problem} (the value is not shown: {hidden}){more}"
    return f"{where.label}: {what}, got {_show(where.value if where.value is not _MISSING else err.get('input'))}{more}"


def describe_parse_error(section: str, settings_cls: type[BaseModel]) -> str:
    """pydantic-settings names only the section whose variable is not JSON; find the variable."""
    values = _environment()
    section_var = f"{PREFIX}{section.upper()}"
    section_model, _ = _walk(settings_cls, (section,))
    if section_var in values and not _is_json(values[section_var]):
        expected = "a JSON object of the section's settings"
        return _not_valid_json(section_var, expected, values[section_var], section_model)
    fields = section_model.model_fields if _is_model(section_model) else {}
    for name, value in values.items():
        key = name.removeprefix(section_var + "__").lower()
        # Only lists and tables are read as JSON; a plain text value such as a URL never is.
        if not name.startswith(section_var + "__") or key not in fields or not _is_complex(fields[key]):
            continue
        if not _is_json(value):
            expected = _EXPECTED.get((section, key), "a JSON value")
            return _not_valid_json(name, expected, value, fields[key].annotation)
    return f"{section_var}__*: a value in this section is not valid JSON"


def _not_valid_json(name: str, expected: str, value: str, annotation: Any) -> str:
    hidden = _hidden(annotation)
    if hidden:
        return f"{name}: expected {expected}{_json_problem(value)} (the value is not shown: {hidden})"
    return f"{name}: expected {expected}, got {_show(value)}"


def _hidden(annotation: Any) -> str | None:
    """Why a value of this type must not be shown (it is, or may hold, a secret), or None."""
    if annotation is None:  # a key vaultbot does not know: it may be a misspelt "env" or "headers"
        return "it is not a setting vaultbot knows"
    if _is_secret(annotation):
        return "it is a secret"
    if _holds_secret(annotation):
        return "it holds secrets"
    return None


def _json_problem(value: str) -> str:
    """Where a text stops being JSON (``; it is not valid JSON (Expecting ',' delimiter at line 1,
    column 58)``), or nothing when it is JSON."""
    try:
        json.loads(value)
    except json.JSONDecodeError as exc:
        return f"; it is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
    return ""


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


def _walk(settings_cls: type[BaseModel], loc: tuple[Any, ...]) -> tuple[Any, FieldInfo | None]:
    """The type of the value at ``loc`` (through sections, tables of the user's own keys and lists)
    and the field that holds it; None for the type when ``loc`` names a key no table has."""
    kind: Any = settings_cls
    field: FieldInfo | None = None
    for part in loc:
        kind = _bare(kind)
        if _is_model(kind):
            fields = kind.model_fields
            # The SDK's variables are validated under their alias (ANTHROPIC_API_KEY for anthropic_api_key).
            field = fields.get(str(part)) or fields.get(str(part).lower())
            if field is None:
                return None, None
            kind = field.annotation
        elif get_origin(kind) is dict:
            kind = get_args(kind)[1]
        elif get_origin(kind) in (list, set, tuple):
            kind = get_args(kind)[0]
        else:
            break  # below a plain value: pydantic names the type it tried, as in a union
    return kind, field


def _bare(kind: Any) -> Any:
    """``kind`` without ``Annotated`` and ``| None``."""
    while True:
        if get_origin(kind) is Annotated:
            kind = get_args(kind)[0]
        elif get_origin(kind) in (Union, UnionType) and type(None) in get_args(kind):
            rest = [arg for arg in get_args(kind) if arg is not type(None)]
            if len(rest) != 1:
                return kind
            kind = rest[0]
        else:
            return kind


def _is_model(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, BaseModel)


def _is_complex(field: FieldInfo) -> bool:
    kind = get_origin(field.annotation) or field.annotation
    return kind in (list, dict, set, tuple) or isinstance(kind, type) and issubclass(kind, BaseModel)


def _is_secret(annotation: Any) -> bool:
    return _bare(annotation) is SecretStr


def _holds_secret(annotation: Any) -> bool:
    """Whether a value of this type is a secret or holds one (an MCP server's ``env``, a section with a token)."""
    kind = _bare(annotation)
    if kind is SecretStr:
        return True
    if _is_model(kind):
        return any(_holds_secret(field.annotation) for field in kind.model_fields.values())
    return any(_holds_secret(arg) for arg in get_args(kind))


def _closest_key(key: str, table: Any) -> str:
    """ "; did you mean 'command'?" for the key of ``table`` most like ``key``, else the keys it has."""
    known = list(table.model_fields) if _is_model(table) else []
    match = difflib.get_close_matches(key.lower(), known, n=1, cutoff=0.6)
    if match:
        return f"; did you mean {match[0]!r}?"
    return f" (the keys are {', '.join(known)})" if known else ""


class _Where(NamedTuple):
    """Where a value was read: ``label`` names it (a variable and the place inside its JSON, or the
    file and key); ``value`` is the text or value read when that is exactly the value in question
    (else ``_MISSING``); ``variable`` says it is a variable's text."""

    label: str
    value: Any
    variable: bool = False


def _where(settings_cls: type[BaseModel], loc: tuple[Any, ...], toml: Path, *, table: bool = False) -> _Where:
    """Where the value at ``loc`` was read. With ``table``, ``loc`` is a table, named as TOML names
    it (``[mcp.servers.files]``)."""
    parts = [str(p) for p in loc]
    values = _environment()
    if parts and parts[0].upper().startswith("ANTHROPIC_"):  # the SDK's own variables, without our prefix
        names = [(parts[0].upper(), 1)]
    else:
        names = [(PREFIX + "__".join(p.upper() for p in parts[:n]), n) for n in range(len(parts), 0, -1)]
    for name, used in names:
        if name in values:
            inside = _inside(loc, used)
            return _Where(f"{name} ({inside})", _MISSING) if inside else _Where(name, values[name], variable=True)
    found = _toml_value(toml, parts)
    if found is not _MISSING:
        if table:
            return _Where(f"{toml} [{'.'.join(parts)}]", found)
        key = f"[{'.'.join(parts[:-1])}] {parts[-1]}" if len(parts) > 1 else parts[0].lower()
        return _Where(f"{toml} {key}", found)
    return _Where(names[0][0] if names else "settings", _MISSING)


# Errors of a value that should have been a JSON table or list.
_JSON_KINDS = {"model_type", "dict_type", "list_type"}
# What one item of a table of the user's own keys is called, where saying so helps.
_ITEMS = {("mcp", "servers"): "server"}


def _inside(loc: tuple[Any, ...], used: int) -> str:
    """The place at ``loc`` within the JSON of a variable that names its first ``used`` parts:
    ``server 'files', timeout``."""
    places = []
    for n in range(used, len(loc)):
        item = _ITEMS.get(tuple(str(p) for p in loc[n - 2 : n]))
        places.append(f"{item} {str(loc[n])!r}" if item else str(loc[n]))
    return ", ".join(places)


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
        where = "" if name in environment else " in .env"
        if name.startswith(PREFIX) and not _sets_something(name, names):
            found.append(f"unknown setting {name}{where}{_closest(name, [*names, *sdk])}")
        elif name.startswith(_SDK_PREFIX) and name not in sdk and name not in _SDK_OWN:
            # Other ANTHROPIC_ names belong to other programs (the SDK's cloud options, other tools):
            # only one that looks like a misspelling of ours is named.
            bare = {known.removeprefix(_SDK_PREFIX): known for known in sdk}
            match = difflib.get_close_matches(name.removeprefix(_SDK_PREFIX), list(bare), n=1, cutoff=0.75)
            if match:
                found.append(f"unknown setting {name}{where}; did you mean {bare[match[0]]}?")
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
