"""Settings come from the environment, .env and TOML, with the environment winning; a bad value
ends the program with one clear line and exit status 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.settings import SettingsError, load_settings


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


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("VAULTBOT_TELEGRAM__ALLOWED_USERS", "[1, x]", "VAULTBOT_TELEGRAM__ALLOWED_USERS: expected a JSON list"),
        ("VAULTBOT_TELEGRAM__ALLOWED_USERS", '["bob"]', "VAULTBOT_TELEGRAM__ALLOWED_USERS: expected a JSON list"),
        ("VAULTBOT_MODEL__MAX_TOOL_CALLS", "0", "VAULTBOT_MODEL__MAX_TOOL_CALLS"),
        ("VAULTBOT_BUS__MAX_ATTEMPTS", "many", "VAULTBOT_BUS__MAX_ATTEMPTS"),
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
