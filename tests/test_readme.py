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
    assert "pytest" in tests and "python3 -m venv" in tests


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert quick_start()[1] in ci
