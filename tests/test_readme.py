"""The README's quick start is the contract with a new user: keep it true."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def quick_start() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_the_quick_start_is_two_commands_one_chats_one_tests() -> None:
    chat, tests = quick_start()[:2]
    assert chat.endswith("vaultbot chat") and "python3 -m venv" in chat
    assert tests == "scripts/test"
    # The one test command sets everything up: the browser the review page's tests drive, the
    # virtualenv, then every test.
    script = (ROOT / "scripts" / "test").read_text()
    assert "apt-get install -y -qq chromium" in script
    assert "python3 -m venv .venv" in script and "pip install -q -e '.[test]'" in script and "pytest" in script


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert quick_start()[1] in ci
