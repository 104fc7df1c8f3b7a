"""A setting vaultbot does not have (a typo, most often) is named with the closest one there is:
once on standard error when a command starts, and as a failed check in `vaultbot doctor`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import subprocess_env

CASES = [
    (
        "variable",
        {"VAULTBOT_VAULT__PATHH": "notes"},
        "",
        "",
        "unknown setting VAULTBOT_VAULT__PATHH; did you mean VAULTBOT_VAULT__PATH?",
    ),
    (
        "sdk variable misspelt",
        {"VAULTBOT_ANTHROPIC_KEY": "sk-ant-unused"},
        "",
        "",
        "unknown setting VAULTBOT_ANTHROPIC_KEY; did you mean ANTHROPIC_API_KEY?",
    ),
    (
        "sdk's own name misspelt",
        {"ANTHROPIC_APIKEY": "sk-ant-unused"},
        "",
        "",
        "unknown setting ANTHROPIC_APIKEY; did you mean ANTHROPIC_API_KEY?",
    ),
    (
        "sdk's base url misspelt in .env",
        {},
        "ANTHROPIC_BASE_ULR=http://127.0.0.1:1\n",
        "",
        "unknown setting ANTHROPIC_BASE_ULR in .env; did you mean ANTHROPIC_BASE_URL?",
    ),
    (
        "dotenv",
        {},
        "VAULTBOT_BUS__MAX_ATTEMPT=3\n",
        "",
        "unknown setting VAULTBOT_BUS__MAX_ATTEMPT in .env; did you mean VAULTBOT_BUS__MAX_ATTEMPTS?",
    ),
    (
        "toml key",
        {},
        "",
        "[vault]\npathh = 'notes'\n",
        "unknown setting config/vaultbot.toml [vault] pathh; did you mean [vault] path?",
    ),
    (
        "toml section",
        {},
        "",
        "[nosuch]\nkey = 1\n",
        "unknown section config/vaultbot.toml [nosuch] (vaultbot has no such section)",
    ),
    (
        "misspelt toml section",
        {},
        "",
        "[telegarm]\ntoken = 'x'\n",
        "unknown section config/vaultbot.toml [telegarm]; did you mean [telegram]?",
    ),
]


def vaultbot(
    tmp_path: Path, command: str, env: dict[str, str], dotenv: str, toml: str
) -> subprocess.CompletedProcess[str]:
    if dotenv:
        (tmp_path / ".env").write_text(dotenv)
    if toml:
        (tmp_path / "config").mkdir(exist_ok=True)
        (tmp_path / "config" / "vaultbot.toml").write_text(toml)
    return subprocess.run(
        [sys.executable, "-m", "bot", command],
        input="buy oat milk\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(**env),
        timeout=60,
    )


@pytest.mark.parametrize(("case", "env", "dotenv", "toml", "warning"), CASES, ids=[c[0] for c in CASES])
def test_chat_names_an_unknown_setting_once_and_goes_on(
    tmp_path: Path, case: str, env: dict[str, str], dotenv: str, toml: str, warning: str
) -> None:
    done = vaultbot(tmp_path, "chat", env, dotenv, toml)
    assert done.returncode == 0
    assert done.stderr == f"vaultbot: warning: {warning}\n"
    assert (tmp_path / "data" / "vault" / "Inbox" / "buy oat milk.md").exists()  # the setting meant was not used


@pytest.mark.parametrize(("case", "env", "dotenv", "toml", "warning"), CASES, ids=[c[0] for c in CASES])
def test_doctor_fails_on_an_unknown_setting(
    tmp_path: Path, case: str, env: dict[str, str], dotenv: str, toml: str, warning: str
) -> None:
    done = vaultbot(tmp_path, "doctor", env, dotenv, toml)
    assert done.returncode == 1 and done.stderr == ""
    assert f"FAIL  settings: {warning}" in done.stdout.splitlines()
    assert "sk-ant-unused" not in done.stdout


def test_known_settings_in_every_form_raise_no_warning(tmp_path: Path) -> None:
    env = {
        "VAULTBOT_VAULT__PATH": "notes",
        "VAULTBOT_TIMEZONE": "Europe/Berlin",
        "VAULTBOT_BUS": '{"max_attempts": 3}',
        "VAULTBOT_CONFIG": "config/vaultbot.toml",
        "vaultbot_model__name": "claude-haiku-5",
        "ANTHROPIC_MODEL": "another program's",  # not one of vaultbot's, nor like one
    }
    toml = "timezone = 'Europe/Berlin'\n[vault]\ninbox = 'In'\n[telegram]\nallowed_users = [42]\n"
    done = vaultbot(tmp_path, "chat", env, "VAULTBOT_STORE__PATH=state/bot.db\n", toml)
    assert done.returncode == 0 and done.stderr == ""
    assert (tmp_path / "notes" / "In" / "buy oat milk.md").exists()
