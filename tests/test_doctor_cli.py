"""`vaultbot doctor` tells the truth: it writes where capture files, asks the model API one free
question, and fails (exit 1) with the reason in one line when something is broken."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic
from tests.helpers import bound_by_permissions, subprocess_env

KEY = "sk-ant-doctor-0123456789"


def doctor(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bot", "doctor"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(**env),
        preexec_fn=bound_by_permissions,
        timeout=60,
    )


def line(done: subprocess.CompletedProcess[str], name: str) -> str:
    [found] = [line for line in done.stdout.splitlines() if line.split(":")[0].split()[-1] == name]
    return found


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        server.key = KEY
        yield server


def test_a_read_only_inbox_fails_the_vault_check(tmp_path: Path) -> None:
    inbox = tmp_path / "data" / "vault" / "Inbox"
    inbox.mkdir(parents=True, mode=0o555)
    try:
        done = doctor(tmp_path)
    finally:
        inbox.chmod(0o755)
    assert done.returncode == 1
    assert line(done, "vault") == "FAIL  vault: data/vault/Inbox is not writable (Permission denied)"
    assert list(inbox.iterdir()) == []


def test_a_writable_vault_is_probed_where_capture_files(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir(mode=0o700)  # private, as vaultbot makes it: a folder others can read fails
    (tmp_path / "data" / "vault" / "Inbox").mkdir(parents=True)
    done = doctor(tmp_path)
    assert done.returncode == 0, done.stdout
    vault = (tmp_path / "data" / "vault").resolve()
    assert line(done, "vault") == f"ok   vault: {vault} is writable (a probe file written and removed in Inbox/)"
    assert list((vault / "Inbox").iterdir()) == []


@pytest.mark.parametrize(
    ("setup", "says"),
    [
        ("vault is a file", "FAIL  vault: notes is a file, not a folder"),
        (
            "store is text",
            "FAIL  database: cannot open the store store.db (VAULTBOT_STORE__PATH): file is not a database",
        ),
    ],
)
def test_what_stops_the_other_commands_is_reported_not_raised(tmp_path: Path, setup: str, says: str) -> None:
    (tmp_path / "notes").write_text("not a folder\n")
    (tmp_path / "store.db").write_text("not a database\n")
    env = {"VAULTBOT_VAULT__PATH": "notes"} if setup == "vault is a file" else {"VAULTBOT_STORE__PATH": "store.db"}
    done = doctor(tmp_path, **env)
    assert done.returncode == 1 and done.stderr == ""
    assert says in done.stdout.splitlines()


def test_a_working_model_api_is_asked_one_free_question(tmp_path: Path, fake: FakeAnthropic) -> None:
    done = doctor(tmp_path, ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=fake.base_url)
    assert done.returncode == 0, done.stdout
    assert line(done, "model") == (
        f"ok   model: claude-sonnet-5 via {fake.base_url}: reachable, key accepted, model known"
    )
    assert [request.path for request in fake.requests] == ["/v1/models/claude-sonnet-5"]  # nothing billed


def test_a_refused_key_fails_the_model_check_without_showing_it(tmp_path: Path, fake: FakeAnthropic) -> None:
    wrong = "sk-ant-wrong-9876543210"
    done = doctor(tmp_path, ANTHROPIC_API_KEY=wrong, ANTHROPIC_BASE_URL=fake.base_url)
    assert done.returncode == 1
    assert line(done, "model") == (
        f"FAIL  model: claude-sonnet-5 via {fake.base_url}: "
        "The Anthropic API key was refused; check ANTHROPIC_API_KEY. (HTTP 401)"
    )
    assert wrong not in done.stdout + done.stderr


def test_a_model_the_api_does_not_know_fails_the_model_check(tmp_path: Path, fake: FakeAnthropic) -> None:
    fake.models = ["claude-haiku-5"]
    done = doctor(tmp_path, ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=fake.base_url)
    assert done.returncode == 1
    assert line(done, "model").endswith("The model was not found; check VAULTBOT_MODEL__NAME. (HTTP 404)")


def test_an_unreachable_model_api_fails_the_model_check(tmp_path: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    done = doctor(tmp_path, ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=f"http://127.0.0.1:{port}")
    assert done.returncode == 1
    assert line(done, "model").startswith(
        f"FAIL  model: claude-sonnet-5 via http://127.0.0.1:{port}: could not reach the model API ("
    )


def test_a_model_api_that_never_answers_fails_after_the_timeout(tmp_path: Path) -> None:
    # A listening socket nobody accepts from: the connection is made, no answer ever comes.
    with socket.create_server(("127.0.0.1", 0)) as silent:
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        done = doctor(tmp_path, ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=url, VAULTBOT_MODEL__TIMEOUT="1")
    assert done.returncode == 1
    assert line(done, "model") == f"FAIL  model: claude-sonnet-5 via {url}: the model API did not answer within 1 s"


def test_doctor_says_where_warnings_are_logged(tmp_path: Path) -> None:
    done = doctor(tmp_path, VAULTBOT_STORE__PATH="state/bot.db")
    log = (tmp_path / "state" / "bot.log").resolve()
    assert (
        line(done, "log") == f"ok   log: warnings and errors go to {log} (with -v, INFO and up on standard error too)"
    )


def test_doctor_says_which_system_prompt_the_model_gets(tmp_path: Path) -> None:
    built_in = doctor(tmp_path)
    assert line(built_in, "prompt") == (
        "ok   system prompt: the built-in one (config/system_prompt.md does not exist; VAULTBOT_MODEL__SYSTEM_PROMPT)"
    )
    prompt = tmp_path / "config" / "system_prompt.md"
    prompt.parent.mkdir()
    prompt.write_text("You are my terse assistant. Answer in one line.\n")
    own = doctor(tmp_path)
    assert line(own, "prompt") == f"ok   system prompt: {prompt.resolve()} (9 words; VAULTBOT_MODEL__SYSTEM_PROMPT)"
    prompt.chmod(0o000)
    try:
        unreadable = doctor(tmp_path)
    finally:
        prompt.chmod(0o644)
    assert unreadable.returncode == 1
    assert line(unreadable, "prompt") == (
        "FAIL  system prompt: config/system_prompt.md cannot be read (Permission denied): "
        "VAULTBOT_MODEL__SYSTEM_PROMPT names it"
    )


def test_a_base_url_ending_in_v1_is_named_as_the_slip_it_is(tmp_path: Path, fake: FakeAnthropic) -> None:
    done = doctor(tmp_path, ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=f"{fake.base_url}/v1")
    assert done.returncode == 1
    assert line(done, "model").endswith(
        "ANTHROPIC_BASE_URL ends in /v1, and the SDK adds /v1 itself: take the /v1 off (HTTP 404)"
    )
    assert "VAULTBOT_MODEL__NAME" not in line(done, "model")


def test_a_chat_through_a_base_url_ending_in_v1_says_the_same(tmp_path: Path, fake: FakeAnthropic) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bot", "chat"],
        input="remember the dentist\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=f"{fake.base_url}/v1/"),
        timeout=60,
    )
    said = done.stdout + done.stderr
    assert "ANTHROPIC_BASE_URL ends in /v1, and the SDK adds /v1 itself: take the /v1 off" in said
    assert "VAULTBOT_MODEL__NAME" not in said
