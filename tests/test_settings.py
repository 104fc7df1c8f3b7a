"""Settings come from the environment, .env and TOML, with the environment winning; a bad value
ends the program with one clear line and exit status 2."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bot.settings import Settings, SettingsError, load_settings
from tests.helpers import ROOT

# The full settings table, and the README's short one of the common settings.
TABLES = (ROOT / "docs" / "settings.md", ROOT / "README.md")
# Defaults the tables give in words rather than as a value ("unset…" is None).
WORDS = {
    ("VAULTBOT_TELEGRAM__BASE_URL", "Telegram's"): "https://api.telegram.org/bot",
    ("VAULTBOT_TELEGRAM__BASE_FILE_URL", "Telegram's"): "https://api.telegram.org/file/bot",
    ("VAULTBOT_TIMEZONE", "the machine's"): None,  # None: the machine's zone, looked up when used
    ("VAULTBOT_REVIEW__TOKEN", "generated once, kept in the store"): None,  # None: the store's token
    ("VAULTBOT_MCP__SERVERS", "none"): {},
}
# A valid value other than the default, where a made-up one would be refused.
SAMPLES = {
    "VAULTBOT_TIMEZONE": "Europe/Berlin",
    "VAULTBOT_BUDGET__DAILY_USD": "2",
    "VAULTBOT_TRANSCRIBE__BASE_URL": "http://localhost:8000/v1",
    "VAULTBOT_TELEGRAM__BASE_URL": "http://localhost:8081/bot",
    "VAULTBOT_TELEGRAM__BASE_FILE_URL": "http://localhost:8081/file/bot",
    "VAULTBOT_VAULT__CAPTURE_TO": "daily",
    "VAULTBOT_MODEL__SDK_MAX_RETRIES": "3",
    "VAULTBOT_TELEGRAM__WEBHOOK_SECRET": "a-secret-of-sixteen",
    "VAULTBOT_REVIEW__PUBLIC_URL": "https://review.example.com",
    "VAULTBOT_REVIEW__TOKEN": "a-token-of-sixteen-or-more",
    "VAULTBOT_VAULT__SEARCH_BY_MEANING": "false",
    "VAULTBOT_VAULT__DOCUMENT_MEMORY_MB": "256",
    "VAULTBOT_MCP__SERVERS": '{"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem"]}}',
    "VAULTBOT_EMAIL__IMAP_SECURITY": "starttls",
    "VAULTBOT_EMAIL__SMTP_SECURITY": "starttls",
    "VAULTBOT_EMAIL__ADDRESS": "bot@example.org",
    "VAULTBOT_EMAIL__ALLOWED_SENDERS": '["ann@example.com"]',
    "VAULTBOT_EMAIL__REQUIRE_AUTHENTICATED": "false",
    "VAULTBOT_MATRIX__HOMESERVER": "https://matrix.example.org",
    "VAULTBOT_MATRIX__USER_ID": "@vaultbot:example.org",
    "VAULTBOT_MATRIX__ALLOWED_USERS": '["@ann:example.org"]',
    "VAULTBOT_BACKUP__EVERY": "1d",
    "VAULTBOT_BACKUP__KEEP": "3",
}
# Settings that are refused alone: the other variables that must be set with them.
COMPANIONS = {
    "VAULTBOT_TELEGRAM__WEBHOOK_URL": {"VAULTBOT_TELEGRAM__WEBHOOK_SECRET": "a-secret-of-sixteen"},
    "VAULTBOT_MATRIX__HOMESERVER": {
        "VAULTBOT_MATRIX__HOMESERVER": "https://matrix.example.org",
    "VAULTBOT_MATRIX__USER_ID": "@vaultbot:example.org",
        "VAULTBOT_MATRIX__PASSWORD": "a-password",
    },
    "VAULTBOT_EMAIL__IMAP_HOST": {
        "VAULTBOT_EMAIL__SMTP_HOST": "smtp.example.org",
        "VAULTBOT_EMAIL__USERNAME": "bot@example.org",
        "VAULTBOT_EMAIL__PASSWORD": "an-app-password",
        "VAULTBOT_EMAIL__ADDRESS": "bot@example.org",
        "VAULTBOT_EMAIL__TRUSTED_AUTHSERV_ID": "mx.example.org",
    },
}


def documented_defaults(table: Path) -> list[tuple[str, str]]:
    """(variable, default as written) for every row of the settings table in ``table``.

    A row may name several variables (`…__KEY` is the section of the name before it); its default cell
    then gives one default for all, or one each, separated by ", ".
    """
    lines = table.read_text(encoding="utf-8").splitlines()
    start = lines.index("| setting | default | |") + 2
    rows: list[tuple[str, str]] = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        names_cell, default_cell = (cell.strip() for cell in line.strip("|").split("|")[:2])
        names: list[str] = []
        for name in re.findall(r"`([^`]+)`", names_cell):
            if name.startswith("…__"):  # "…__BASE_FILE_URL": the same section as the name before it
                name = names[-1].rsplit("__", 1)[0] + name[1:]
            names.append(name)
        defaults = default_cell.split(", ")
        if len(names) == 1 or len(defaults) != len(names):
            defaults = [default_cell] * len(names)
        rows += [(name, default.strip("`")) for name, default in zip(names, defaults, strict=True)]
    return rows


def every_variable() -> set[str]:
    """The variable of every setting bot/settings/model.py defines (``VAULTBOT_VAULT__PATH``, ``ANTHROPIC_API_KEY``)."""
    names: set[str] = set()
    for field_name, field in Settings.model_fields.items():
        if field.validation_alias is not None:  # the SDK's own variables keep the SDK's names
            names.add(field_name.upper())
        elif isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            names |= {f"VAULTBOT_{field_name}__{key}".upper() for key in field.annotation.model_fields}
        else:
            names.add(f"VAULTBOT_{field_name}".upper())
    return names


DOCUMENTED = [(table.name, *row) for table in TABLES for row in documented_defaults(table)]


def field_of(settings: Settings, variable: str) -> Any:
    """The value of the setting ``variable`` names (``VAULTBOT_MODEL__NAME`` → ``settings.model.name``)."""
    if not variable.startswith("VAULTBOT_"):  # the SDK's own variables
        return getattr(settings, variable.lower())
    value: Any = settings
    for part in variable.removeprefix("VAULTBOT_").lower().split("__"):
        value = getattr(value, part)
    return value


def as_documented(variable: str, written: str, actual: Any) -> Any:
    """A table's default converted to the type the setting has."""
    if written.startswith("unset"):
        return None
    if (variable, written) in WORDS:
        return WORDS[variable, written]
    if isinstance(actual, bool):
        return {"true": True, "false": False}[written]
    if isinstance(actual, Path):
        return Path(written)
    if isinstance(actual, list):
        return json.loads(written)
    if isinstance(actual, int | float):
        return type(actual)(written)
    return written


def test_the_settings_table_is_read_whole() -> None:
    names = [name for name, _ in documented_defaults(TABLES[0])]
    assert len(names) >= 15 and len(set(names)) == len(names)
    assert {"VAULTBOT_VAULT__PATH", "ANTHROPIC_BASE_URL", "VAULTBOT_TELEGRAM__BASE_FILE_URL"} <= set(names)
    assert ("VAULTBOT_TELEGRAM__WEBHOOK_PORT", "8443") in documented_defaults(TABLES[0])


def test_every_setting_has_a_row_in_the_settings_table() -> None:
    documented = {name for name, _ in documented_defaults(TABLES[0])}
    assert sorted(every_variable() - documented) == []
    assert sorted(documented - every_variable()) == []


@pytest.mark.parametrize(("table", "variable", "written"), DOCUMENTED)
def test_every_default_in_the_settings_tables_is_the_real_one(table: str, variable: str, written: str) -> None:
    actual = field_of(load_settings(), variable)
    assert actual == as_documented(variable, written, actual)


@pytest.mark.parametrize(
    ("variable", "default"),
    [  # defaults the README gives in its prose rather than the table
        ("VAULTBOT_VAULT__INDEX_STALENESS", 1.0),
        ("VAULTBOT_VAULT__CAPTURE_TO", "inbox"),
        ("VAULTBOT_VAULT__DAILY_FOLDER", "Daily"),
        ("VAULTBOT_VAULT__DAILY_PATTERN", "%Y-%m-%d"),
        ("VAULTBOT_BUS__LEASE_SECONDS", 30.0),
        ("VAULTBOT_TELEGRAM__WEBHOOK_LISTEN", "127.0.0.1"),
        ("VAULTBOT_TELEGRAM__WEBHOOK_PORT", 8443),
        ("VAULTBOT_TELEGRAM__WEBHOOK_URL", None),
        ("VAULTBOT_MODEL__SUMMARY_MODEL", None),
    ],
)
def test_defaults_named_in_the_readme_text(variable: str, default: Any) -> None:
    assert field_of(load_settings(), variable) == default


@pytest.mark.parametrize(("table", "variable", "written"), DOCUMENTED)
def test_every_variable_in_the_settings_tables_sets_its_setting(
    monkeypatch: pytest.MonkeyPatch, table: str, variable: str, written: str
) -> None:
    default = field_of(load_settings(), variable)
    value = SAMPLES.get(variable) or {bool: "true", int: "7", float: "7", list: "[7]"}.get(type(default), "/x/seven")
    monkeypatch.setenv(variable, value)
    for companion, companion_value in COMPANIONS.get(variable, {}).items():
        monkeypatch.setenv(companion, companion_value)
    assert field_of(load_settings(), variable) != default


def test_defaults_match_design() -> None:
    settings = load_settings()
    assert settings.vault.path == Path("data/vault")
    assert settings.store.path == Path("data/vaultbot.db")
    assert settings.telegram.base_url == "https://api.telegram.org/bot"
    assert settings.telegram.base_file_url == "https://api.telegram.org/file/bot"
    assert settings.capture_mode


def test_environment_beats_toml_beats_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "vaultbot.toml").write_text(
        '[vault]\npath = "/from/toml"\n[model]\nname = "toml-model"\nmax_tool_calls = 7\n'
    )
    monkeypatch.setenv("VAULTBOT_MODEL__NAME", "env-model")
    settings = load_settings()
    assert settings.vault.path == Path("/from/toml")
    assert settings.model.name == "env-model"
    assert settings.model.max_tool_calls == 7


def test_config_file_named_by_env_and_dotenv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "elsewhere.toml"
    other.write_text('[store]\npath = "/x/y.db"\n')
    monkeypatch.setenv("VAULTBOT_CONFIG", str(other))
    (tmp_path / ".env").write_text("VAULTBOT_TELEGRAM__ALLOWED_USERS=[42, 43]\nANTHROPIC_API_KEY=sk-test\n")
    settings = load_settings()
    assert settings.store.path == Path("/x/y.db")
    assert settings.telegram.allowed_users == [42, 43]
    assert not settings.capture_mode


def test_secrets_are_not_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-very-secret")
    monkeypatch.setenv("VAULTBOT_TELEGRAM__TOKEN", "123:telegram-secret")
    settings = load_settings()
    shown = repr(settings) + str(settings.model_dump())
    assert "sk-very-secret" not in shown and "telegram-secret" not in shown


def test_a_secret_left_blank_is_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    # An emptied placeholder in .env ("ANTHROPIC_API_KEY=") must not turn the assistant on with a
    # key of spaces, nor count as a webhook secret.
    for name in (
        "ANTHROPIC_API_KEY",
        "VAULTBOT_TELEGRAM__TOKEN",
        "VAULTBOT_REVIEW__TOKEN",
        "VAULTBOT_TRANSCRIBE__API_KEY",
        "VAULTBOT_TELEGRAM__WEBHOOK_SECRET",
    ):
        monkeypatch.setenv(name, "  ")
    settings = load_settings()
    assert settings.capture_mode and settings.anthropic_api_key is None
    assert settings.telegram.token is None and settings.telegram.webhook_secret is None
    assert settings.review.token is None
    assert settings.transcribe.api_key is None and not settings.transcribe.enabled
    monkeypatch.setenv("VAULTBOT_TELEGRAM__WEBHOOK_URL", "https://bot.example.org/hook")
    with pytest.raises(SettingsError, match="WEBHOOK_URL is set without VAULTBOT_TELEGRAM__WEBHOOK_SECRET"):
        load_settings()


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("VAULTBOT_TELEGRAM__ALLOWED_USERS", "[1, x]", "VAULTBOT_TELEGRAM__ALLOWED_USERS: expected a JSON list"),
        ("VAULTBOT_TELEGRAM__ALLOWED_USERS", '["bob"]', "VAULTBOT_TELEGRAM__ALLOWED_USERS: expected a JSON list"),
        ("VAULTBOT_MODEL__MAX_TOOL_CALLS", "0", "VAULTBOT_MODEL__MAX_TOOL_CALLS"),
        ("VAULTBOT_BUS__MAX_ATTEMPTS", "many", "VAULTBOT_BUS__MAX_ATTEMPTS"),
        # Reading a document: no limit of nothing, none that never ends, none too small to start a reader.
        ("VAULTBOT_VAULT__DOCUMENT_SECONDS", "0", "VAULTBOT_VAULT__DOCUMENT_SECONDS: expected a number above 0"),
        ("VAULTBOT_VAULT__DOCUMENT_SECONDS", "nan", "VAULTBOT_VAULT__DOCUMENT_SECONDS: expected a number of at most"),
        ("VAULTBOT_VAULT__PAGE_SECONDS", "-1", "VAULTBOT_VAULT__PAGE_SECONDS: expected a number above 0"),
        ("VAULTBOT_VAULT__DOCUMENT_MEMORY_MB", "64", "DOCUMENT_MEMORY_MB: expected a number of at least 128"),
        # Telegram opens only https pages; a path may not look like one of the page's own addresses.
        (
            "VAULTBOT_REVIEW__PUBLIC_URL",
            "http://review.example.com",
            "VAULTBOT_REVIEW__PUBLIC_URL: expected an https:// address",
        ),
        (
            "VAULTBOT_REVIEW__PUBLIC_URL",
            "https://example.com/runs",
            "VAULTBOT_REVIEW__PUBLIC_URL: its path must not start with /runs",
        ),
    ],
)
def test_bad_value_names_the_setting(monkeypatch: pytest.MonkeyPatch, name: str, value: str, expected: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        load_settings()


def test_missing_config_file_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VAULTBOT_CONFIG", "/nowhere/vaultbot.toml")
    with pytest.raises(SettingsError, match="VAULTBOT_CONFIG"):
        load_settings()
