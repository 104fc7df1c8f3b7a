"""Dead letters and `vaultbot retry` as a user meets them: real `vaultbot` subprocesses, the real SDK
against the fake Messages API, a real vault and database; and a store that is not a database ends a
command with one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes import anthropic_server as api
from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import SEVERAL_PROCESSES, subprocess_env

pytestmark = SEVERAL_PROCESSES  # several `vaultbot` processes per test


def vaultbot(
    tmp_path: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(**(env or {})),
        timeout=60,
    )


def on_model(fake: FakeAnthropic) -> dict[str, str]:
    """A key, the fake API, and retries short enough for a test (two attempts, 10 ms apart)."""
    return {
        "ANTHROPIC_API_KEY": "sk-ant-cli-secret",
        "ANTHROPIC_BASE_URL": fake.base_url,
        "VAULTBOT_MODEL__SDK_MAX_RETRIES": "0",
        "VAULTBOT_BUS__MAX_ATTEMPTS": "2",
        "VAULTBOT_BUS__BACKOFF_SECONDS": "0.01",
        "LOGNAME": "ann",
        "USER": "ann",
    }


def test_a_message_the_api_cannot_answer_is_filed_logged_with_its_text_and_answered_by_retry(tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        fake.handler = lambda body: api.status(500)
        chatted = vaultbot(tmp_path, "chat", stdin="book the dentist for May\n", env=on_model(fake))
        assert chatted.returncode == 0, chatted.stderr
        [told] = [line for line in chatted.stdout.splitlines() if "vaultbot retry" in line]
        assert "saved in your vault as Inbox/book the dentist for May.md" in told
        note = tmp_path / "data" / "vault" / "Inbox" / "book the dentist for May.md"
        assert "book the dentist for May" in note.read_text()

        [entry] = json.loads(vaultbot(tmp_path, "log", "--json").stdout)
        assert "book the dentist for May" in entry["summary"] and entry["run_id"]
        dead_id = entry["run_id"]
        assert f"vaultbot retry {dead_id[:8]}" in told
        assert dead_id[:8] in vaultbot(tmp_path, "log").stdout
        runs = json.loads(vaultbot(tmp_path, "runs", "--json").stdout)
        assert {"id": dead_id, "status": "dead_lettered"}.items() <= runs[0].items()

        fake.handler = lambda body: api.text("Booked in your notes: dentist in May.")
        retried = vaultbot(tmp_path, "retry", dead_id[:6], env=on_model(fake))
        assert retried.returncode == 0, retried.stderr
        assert f"{dead_id[:8]}: answered" in retried.stdout
        asked = json.dumps(fake.requests[-1].body["messages"][-1])
        assert "Inbox/book the dentist for May.md" in asked

        # The reply waits in the terminal's outbox like any other and is printed by the next chat.
        again = vaultbot(tmp_path, "chat", env=on_model(fake))
        assert "vaultbot> Booked in your notes: dentist in May." in again.stdout
        nothing = vaultbot(tmp_path, "retry", env=on_model(fake))
        assert nothing.returncode == 0 and "Nothing to retry" in nothing.stdout
    assert "sk-ant-cli-secret" not in chatted.stdout + chatted.stderr + retried.stdout + retried.stderr


def test_a_refused_key_is_filed_and_told_in_one_line(tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        fake.handler = lambda body: api.status(401, "authentication_error")
        chatted = vaultbot(tmp_path, "chat", stdin="call mum\n", env=on_model(fake))
    assert chatted.returncode == 0, chatted.stderr
    [told] = chatted.stdout.splitlines()
    assert "ANTHROPIC_API_KEY" in told and "saved in your vault as Inbox/call mum.md" in told


@pytest.mark.parametrize("given", ["abcdef12", "abc"])
def test_retry_of_an_unknown_id_is_one_clear_line(tmp_path: Path, given: str) -> None:
    done = vaultbot(tmp_path, "retry", given)
    assert done.returncode == 1
    [line] = done.stderr.splitlines()
    assert line.startswith("vaultbot: ") and given in line


def test_a_capture_that_cannot_be_written_is_logged_as_a_failure(tmp_path: Path) -> None:
    inbox = tmp_path / "data" / "vault" / "Inbox"
    inbox.parent.mkdir(parents=True)
    inbox.write_text("not a folder")  # as unwritable as a read-only folder, whoever runs the test
    chatted = vaultbot(tmp_path, "chat", stdin="remember the oat milk\n")
    assert chatted.returncode == 0, chatted.stderr
    assert chatted.stdout.startswith("vaultbot> I could not save that")
    [entry] = json.loads(vaultbot(tmp_path, "log", "--json").stdout)
    assert "Captured" not in entry["summary"] and entry["category"] == "error"
    [run] = json.loads(vaultbot(tmp_path, "runs", "--json").stdout)
    assert run["status"] == "failed"


def test_retry_on_a_store_that_is_not_a_database_is_one_line(tmp_path: Path) -> None:
    # Like every command that starts (tests/test_startup.py): one line, status 2, never a traceback.
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "vaultbot.db").write_bytes(os.urandom(8192))
    done = vaultbot(tmp_path, "retry")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "vaultbot: cannot open the store data/vaultbot.db (VAULTBOT_STORE__PATH): file is not a database"
    ]
    assert "Traceback" not in done.stderr
