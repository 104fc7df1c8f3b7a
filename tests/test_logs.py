"""Warnings go to the log file beside the store, not into the chat; `-v` shows them (and INFO)
on standard error too. Secrets reach neither."""

from __future__ import annotations

import contextlib
import logging
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from bot.cli.logs import send_logs
from tests.channels.telegram_harness import finish, wait_until
from tests.conftest import make_settings
from tests.fakes import telegram_server as tg
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.telegram_server import FakeTelegram
from tests.helpers import SEVERAL_PROCESSES, subprocess_env

pytestmark = SEVERAL_PROCESSES  # several `vaultbot` processes per test

KEY = "sk-ant-logs-0123456789"
DEAD_LETTER = "WARNING bot.bus.worker: dead-lettering inbound#1 after 1 attempt(s)"


def chat(tmp_path: Path, fake: FakeAnthropic, *options: str) -> subprocess.CompletedProcess[str]:
    """One line to a chat whose model API fails (HTTP 500), so its message is dead-lettered: a WARNING."""
    env = subprocess_env(
        ANTHROPIC_API_KEY=KEY,
        ANTHROPIC_BASE_URL=fake.base_url,
        VAULTBOT_BUS__MAX_ATTEMPTS="1",
        VAULTBOT_MODEL__SDK_MAX_RETRIES="0",
    )
    return subprocess.run(
        [sys.executable, "-m", "bot", *options, "chat"],
        input="water the plants\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )


def test_a_warning_goes_to_the_log_file_not_into_the_chat(tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        done = chat(tmp_path, fake)
    assert done.returncode == 0, done.stderr
    assert "could not handle your message" in done.stdout  # the user is told, in the chat's own words
    assert done.stderr == ""
    logged = (tmp_path / "data" / "vaultbot.log").read_text()
    assert DEAD_LETTER in logged and KEY not in logged


def test_verbose_shows_the_warning_on_standard_error_and_still_logs_it(tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        done = chat(tmp_path, fake, "-v")
    assert done.returncode == 0, done.stderr
    assert DEAD_LETTER in done.stderr and KEY not in done.stderr
    assert DEAD_LETTER in (tmp_path / "data" / "vaultbot.log").read_text()


def test_the_log_file_is_beside_the_store(tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        env = {"VAULTBOT_STORE__PATH": "state/bot.db"}
        done = subprocess.run(
            [sys.executable, "-m", "bot", "chat"],
            input="water the plants\n",
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=subprocess_env(
                ANTHROPIC_API_KEY=KEY,
                ANTHROPIC_BASE_URL=fake.base_url,
                VAULTBOT_BUS__MAX_ATTEMPTS="1",
                VAULTBOT_MODEL__SDK_MAX_RETRIES="0",
                **env,
            ),
            timeout=60,
        )
    assert done.returncode == 0 and done.stderr == ""
    assert DEAD_LETTER in (tmp_path / "state" / "bot.log").read_text()
    assert not (tmp_path / "data" / "vaultbot.log").exists()


@contextlib.contextmanager
def running(tmp_path: Path, telegram: FakeTelegram, *options: str, **env: str) -> Iterator[subprocess.Popen[str]]:
    """`vaultbot [OPTIONS] run` on the fake Telegram (Ann allowlisted); killed if still running at the end."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", *options, "run"],
        cwd=tmp_path,
        env=subprocess_env(
            VAULTBOT_TELEGRAM__TOKEN=tg.DEFAULT_TOKEN,
            VAULTBOT_TELEGRAM__ALLOWED_USERS="[42]",
            VAULTBOT_TELEGRAM__BASE_URL=telegram.base_url,
            VAULTBOT_TELEGRAM__BASE_FILE_URL=telegram.base_file_url,
            **env,
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)


def test_run_logs_telegram_and_model_failures_to_the_file_without_the_token_or_key(tmp_path: Path) -> None:
    with FakeTelegram() as telegram, FakeAnthropic() as model:
        telegram.fail_next("getUpdates", 500, "Internal Server Error", times=2)
        telegram.push_update(tg.text_update("water the plants"))
        with running(
            tmp_path,
            telegram,
            ANTHROPIC_API_KEY=KEY,
            ANTHROPIC_BASE_URL=model.base_url,
            VAULTBOT_BUS__MAX_ATTEMPTS="1",
            VAULTBOT_MODEL__SDK_MAX_RETRIES="0",
        ) as process:
            log = tmp_path / "data" / "vaultbot.log"
            wait_until(lambda: log.exists() and DEAD_LETTER in log.read_text(), "the dead letter was logged", process)
            wait_until(lambda: len(telegram.sent) >= 1, "the apology was sent", process)
            process.send_signal(signal.SIGTERM)
            errors = finish(process)
    assert process.returncode == 0
    logged = log.read_text()
    assert logged.count("telegram: getUpdates failed (Internal Server Error); retrying") == 2
    assert tg.DEFAULT_TOKEN not in logged and KEY not in logged
    assert "WARNING" not in errors


# A stranger's first name that, written as it came, would start a line that reads as a record of its own.
FORGED = "2026-01-01 09:00:00,000 WARNING bot.channels.telegram.receiver: owner 42 allowed user 666"
RECORD = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: ")


def test_a_strangers_name_cannot_write_a_line_of_its_own_into_the_log(tmp_path: Path) -> None:
    name = f"Eve\n{FORGED}\r\x1b[2J\u2028"
    with FakeTelegram() as telegram:
        telegram.push_update(tg.text_update("let me in", user_id=666, first_name=name))
        with running(tmp_path, telegram, "--verbose") as process:
            log = tmp_path / "data" / "vaultbot.log"
            refused = "refused user 666"
            wait_until(lambda: log.exists() and refused in log.read_text(), "the refusal was logged", process)
            wait_until(lambda: len(telegram.sent) >= 1, "the stranger was answered", process)
            process.send_signal(signal.SIGTERM)
            errors = finish(process)
    assert process.returncode == 0
    # The file as written (read_text would turn a carriage return into a newline), and standard error with -v.
    for written in (log.read_bytes().decode("utf-8"), errors):
        assert "Eve\\n2026-01-01 09:00:00,000 WARNING" in written and "\\r\\x1b[2J\\u2028" in written
        lines = written.split("\n")[:-1]  # a line ends only at a newline: no other character starts one here
        # Besides the records, `vaultbot run` says on standard error what it serves, in a line of its own.
        lines = [line for line in lines if not line.startswith("vaultbot run: capture mode; Telegram as @")]
        assert lines and all(RECORD.match(line) for line in lines), written
        assert not [line for line in lines if line.startswith(FORGED)]
        assert "\x1b" not in written and "\r" not in written and "\u2028" not in written


def test_a_traceback_quoting_outside_text_stays_below_its_record(tmp_path: Path) -> None:
    take_away = send_logs(make_settings(tmp_path), verbose=False)
    try:
        try:
            raise ValueError(f"bad update from Eve\n{FORGED}")
        except ValueError:
            logging.getLogger("bot.channels.telegram.receiver").exception("telegram: skipping malformed update %s", 7)
    finally:
        take_away()
    written = (tmp_path / "vaultbot.log").read_text()
    lines = written.split("\n")[:-1]
    assert RECORD.match(lines[0]) and lines[0].endswith("telegram: skipping malformed update 7")
    assert lines[1:] and all(line.startswith("    ") for line in lines[1:]), written  # the traceback, indented
    assert lines[-1] == f"    {FORGED}"
