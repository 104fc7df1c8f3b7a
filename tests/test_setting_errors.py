"""A bad setting, in any section and of any kind, ends `vaultbot` with exit 2 and one line that
names the variable (or the file and key) and what it should be, never a secret's value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import cli
from tests.helpers import subprocess_env

SECRET = "sk-ant-very-secret-value"


def doctor(env: dict[str, str]) -> tuple[int, str]:
    done = CliRunner().invoke(cli, ["doctor"], env=env, catch_exceptions=False)
    return done.exit_code, done.stderr + done.stdout


@pytest.mark.parametrize(
    ("env", "line"),
    [
        (
            {"VAULTBOT_TELEGRAM__ALLOWED_USERS": "not-a-list"},
            "VAULTBOT_TELEGRAM__ALLOWED_USERS: expected a JSON list of numeric user ids, got 'not-a-list'",
        ),
        (
            {"VAULTBOT_TELEGRAM__ALLOWED_USERS": '["bob"]'},
            """VAULTBOT_TELEGRAM__ALLOWED_USERS: expected a JSON list of numeric user ids, got '["bob"]'""",
        ),
        (
            {"VAULTBOT_TELEGRAM__ALLOW_GROUPS": "maybe"},
            "VAULTBOT_TELEGRAM__ALLOW_GROUPS: expected true or false, got 'maybe'",
        ),
        (
            {"VAULTBOT_TELEGRAM__WEBHOOK_PORT": "70000"},
            "VAULTBOT_TELEGRAM__WEBHOOK_PORT: expected a number of at most 65535, got '70000'",
        ),
        (
            {"VAULTBOT_VAULT__CAPTURE_TO": "weekly"},
            "VAULTBOT_VAULT__CAPTURE_TO: expected one of 'inbox' or 'daily', got 'weekly'",
        ),
        ({"VAULTBOT_VAULT__INBOX": ""}, "VAULTBOT_VAULT__INBOX: expected some text, got ''"),
        (
            {"VAULTBOT_STORE": "{broken"},
            "VAULTBOT_STORE: expected a JSON object of the section's settings, got '{broken'",
        ),
        (
            {"VAULTBOT_MODEL__MAX_TOOL_CALLS": "0"},
            "VAULTBOT_MODEL__MAX_TOOL_CALLS: expected a number of at least 1, got '0'",
        ),
        ({"VAULTBOT_MODEL__TIMEOUT": "soon"}, "VAULTBOT_MODEL__TIMEOUT: expected a number, got 'soon'"),
        ({"VAULTBOT_BUS__CONCURRENCY": "1.5"}, "VAULTBOT_BUS__CONCURRENCY: expected a whole number, got '1.5'"),
        (
            {"VAULTBOT_BUDGET__DAILY_USD": "-2"},
            "VAULTBOT_BUDGET__DAILY_USD: expected an amount in US dollars above 0, got '-2'",
        ),
        (
            {"VAULTBOT_BUDGET__DAILY_USD": "0"},
            "VAULTBOT_BUDGET__DAILY_USD: expected an amount in US dollars above 0, got '0'",
        ),
        (
            {"VAULTBOT_TIMEZONE": "Mars/Olympus_Mons"},
            "VAULTBOT_TIMEZONE: expected an IANA time zone name such as Europe/Berlin, got 'Mars/Olympus_Mons'",
        ),
        (
            {"VAULTBOT_TRANSCRIBE__BASE_URL": "ftp://speech.example"},
            "VAULTBOT_TRANSCRIBE__BASE_URL: expected an http(s) URL such as https://api.openai.com/v1, "
            "got 'ftp://speech.example'",
        ),
        (
            {"VAULTBOT_TRANSCRIBE__MAX_SECONDS": "0"},
            "VAULTBOT_TRANSCRIBE__MAX_SECONDS: expected a number of at least 1, got '0'",
        ),
        (
            {"VAULTBOT_TRANSCRIBE__ATTEMPTS": "11"},
            "VAULTBOT_TRANSCRIBE__ATTEMPTS: expected a number of at most 10, got '11'",
        ),
        ({"VAULTBOT_TRANSCRIBE__MODEL": ""}, "VAULTBOT_TRANSCRIBE__MODEL: expected some text, got ''"),
        (
            {"VAULTBOT_TELEGRAM__DRAFT_INTERVAL": "-1"},
            "VAULTBOT_TELEGRAM__DRAFT_INTERVAL: expected a number of at least 0.0, got '-1'",
        ),
    ],
)
def test_a_bad_variable_is_named_with_what_it_should_be(env: dict[str, str], line: str) -> None:
    code, output = doctor(env)
    assert code == 2
    assert output == f"vaultbot: {line}\n"


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"VAULTBOT_TELEGRAM__WEBHOOK_SECRET": SECRET + "!"}, "VAULTBOT_TELEGRAM__WEBHOOK_SECRET: must be"),
        (
            {"VAULTBOT_TELEGRAM__WEBHOOK_URL": "https://bot.example/hook"},
            "VAULTBOT_TELEGRAM__WEBHOOK_URL is set without VAULTBOT_TELEGRAM__WEBHOOK_SECRET",
        ),
        # A token that is not JSON where the section is given as JSON must not echo the section.
        ({"VAULTBOT_TELEGRAM": '{"token": "' + SECRET + '", "allowed_users": "x"}'}, "VAULTBOT_TELEGRAM"),
        ({"VAULTBOT_TRANSCRIBE": '{"api_key": "' + SECRET + '", "attempts": "many"}'}, "VAULTBOT_TRANSCRIBE"),
        (
            {"VAULTBOT_TRANSCRIBE__API_KEY": SECRET, "VAULTBOT_TRANSCRIBE__BASE_URL": "speech.example"},
            "VAULTBOT_TRANSCRIBE__BASE_URL: expected an http(s) URL",
        ),
    ],
)
def test_a_secret_is_never_echoed(env: dict[str, str], named: str) -> None:
    code, output = doctor({"ANTHROPIC_API_KEY": SECRET, **env})
    assert code == 2
    assert output.startswith(f"vaultbot: {named}") and len(output.splitlines()) == 1
    assert SECRET not in output


@pytest.mark.parametrize(
    ("toml", "line"),
    [
        ("[model]\nmax_tool_calls = 0\n", "[model] max_tool_calls: expected a number of at least 1, got 0"),
        (
            '[telegram]\nallowed_users = "me"\n',
            "[telegram] allowed_users: expected a JSON list of numeric user ids, got 'me'",
        ),
        ('[bus]\nconcurrency = "many"\n', "[bus] concurrency: expected a whole number, got 'many'"),
        ("[budget]\ndaily_usd = -1\n", "[budget] daily_usd: expected an amount in US dollars above 0, got -1"),
        ("[vault]\ncapture_to = 3\n", "[vault] capture_to: expected one of 'inbox' or 'daily', got 3"),
        ('[store]\npath = ["a"]\n', "[store] path: expected a file or folder path, got ['a']"),
        ('timezone = "Atlantis"\n', "timezone: expected an IANA time zone name such as Europe/Berlin, got 'Atlantis'"),
    ],
)
def test_a_bad_value_in_the_toml_file_names_the_file_and_key(tmp_path: Path, toml: str, line: str) -> None:
    config = tmp_path / "my.toml"
    config.write_text(toml)
    code, output = doctor({"VAULTBOT_CONFIG": str(config)})
    assert code == 2
    assert output == f"vaultbot: {config} {line}\n"


def test_a_secret_in_the_toml_file_is_not_echoed(tmp_path: Path) -> None:
    config = tmp_path / "config" / "vaultbot.toml"
    config.parent.mkdir()
    config.write_text(f'[telegram]\nwebhook_secret = "{SECRET}?"\n')
    code, output = doctor({})
    assert code == 2
    assert output.startswith("vaultbot: config/vaultbot.toml [telegram] webhook_secret: must be 16 to 256")
    assert SECRET not in output


def test_the_variable_that_is_not_json_is_named_not_its_plain_text_neighbours() -> None:
    code, output = doctor(
        {"VAULTBOT_TELEGRAM__BASE_URL": "http://127.0.0.1:9/bot", "VAULTBOT_TELEGRAM__ALLOWED_USERS": "42,43"}
    )
    assert (code, output) == (
        2,
        "vaultbot: VAULTBOT_TELEGRAM__ALLOWED_USERS: expected a JSON list of numeric user ids, got '42,43'\n",
    )


def test_a_bad_value_in_dotenv_is_named(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("VAULTBOT_BUS__MAX_ATTEMPTS=lots\n")
    assert doctor({}) == (2, "vaultbot: VAULTBOT_BUS__MAX_ATTEMPTS: expected a whole number, got 'lots'\n")


def test_the_installed_command_prints_one_line_and_exits_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bot", "doctor"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(VAULTBOT_TELEGRAM__ALLOWED_USERS="not-a-list"),
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr == (
        "vaultbot: VAULTBOT_TELEGRAM__ALLOWED_USERS: expected a JSON list of numeric user ids, got 'not-a-list'\n"
    )
    assert done.stdout == ""


def test_the_sdk_key_in_the_toml_file_is_named_but_not_shown(tmp_path: Path) -> None:
    config = tmp_path / "config" / "vaultbot.toml"
    config.parent.mkdir()
    config.write_text("anthropic_api_key = 123456789\n")
    code, output = doctor({})
    assert (code, output) == (
        2,
        "vaultbot: config/vaultbot.toml anthropic_api_key: expected text (the value is not shown: it is a secret)\n",
    )
