"""`vaultbot run` as a real process: it will not start a Telegram bot that would refuse everyone,
and Ctrl-C ends it cleanly with the message in flight finished."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.channels.telegram_harness import RunVaultbot, bus_statuses, finish, wait_until
from tests.fakes import anthropic_server as api
from tests.fakes import telegram_server as tg
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.telegram_server import FakeTelegram

API_KEY = "sk-ant-sigint-test"


@pytest.mark.parametrize("allowlist", [None, "[]"], ids=["unset", "empty"])
def test_run_refuses_a_token_with_an_empty_allowlist(
    fake: FakeTelegram, vaultbot_run: RunVaultbot, allowlist: str | None
) -> None:
    env = {"VAULTBOT_TELEGRAM__TOKEN": tg.DEFAULT_TOKEN, "VAULTBOT_TELEGRAM__BASE_URL": fake.base_url}
    if allowlist is not None:
        env["VAULTBOT_TELEGRAM__ALLOWED_USERS"] = allowlist
    process = vaultbot_run(**env)
    # Fails fast if it starts serving instead: its first call to Telegram shows up here.
    wait_until(lambda: process.poll() is not None or bool(fake.requests), "it exited", process)
    assert [r.method for r in fake.requests] == [], "it started serving"
    errors = finish(process)
    assert process.returncode not in (0, None)
    [line] = errors.strip().splitlines()
    assert "VAULTBOT_TELEGRAM__ALLOWED_USERS" in line and "Traceback" not in errors
    assert tg.DEFAULT_TOKEN not in errors


class StderrLines:
    """Reads a process's standard error as it comes, so a test can wait for a log line."""

    def __init__(self, process: Any) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: Any) -> None:
        for line in process.stderr:
            self.lines.append(line)

    def has(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def text(self) -> str:
        self._thread.join(timeout=10)
        return "".join(self.lines)


def test_ctrl_c_finishes_the_message_in_flight_and_exits_cleanly(
    tmp_path: Path, fake: FakeTelegram, fake_anthropic: FakeAnthropic, vaultbot_run: RunVaultbot
) -> None:
    thinking, answer = threading.Event(), threading.Event()

    def slow_model(body: dict[str, Any]) -> api.Canned:
        thinking.set()
        answer.wait(timeout=30)
        return api.text("Noted: call the plumber.")

    fake_anthropic.handler = slow_model
    env = {
        "VAULTBOT_TELEGRAM__TOKEN": tg.DEFAULT_TOKEN,
        "VAULTBOT_TELEGRAM__ALLOWED_USERS": "[42]",
        "VAULTBOT_TELEGRAM__BASE_URL": fake.base_url,
        "VAULTBOT_TELEGRAM__BASE_FILE_URL": fake.base_file_url,
        "ANTHROPIC_API_KEY": API_KEY,
        "ANTHROPIC_BASE_URL": fake_anthropic.base_url,
    }
    fake.push_update(tg.text_update("remind me to call the plumber"))
    process = vaultbot_run(**env)
    log = StderrLines(process)
    wait_until(thinking.is_set, "the model was asked", process)
    process.send_signal(signal.SIGINT)
    wait_until(lambda: log.has("stopping"), "it began to stop", process)
    answer.set()  # the turn in flight completes after Ctrl-C
    process.wait(timeout=40)
    errors = log.text()
    assert process.returncode == 0, errors
    assert "Traceback" not in errors and "KeyboardInterrupt" not in errors
    assert tg.DEFAULT_TOKEN not in errors and API_KEY not in errors
    db = tmp_path / "data" / "vaultbot.db"
    assert bus_statuses(db, "inbound") == ["done"]  # finished, not abandoned
    with contextlib.closing(sqlite3.connect(db)) as conn:
        [(status,)] = conn.execute("SELECT status FROM runs").fetchall()
        replies = conn.execute("SELECT status, payload FROM bus_messages WHERE topic = 'outbound:telegram'").fetchall()
    assert status == "completed"
    # Its reply reached the user, or waits in the durable outbox for the next start (never lost, never twice).
    [(reply_status, payload)] = replies
    assert json.loads(payload)["text"] == "Noted: call the plumber."
    assert fake.sent_texts == (["Noted: call the plumber."] if reply_status == "done" else [])
    assert reply_status in ("done", "pending")
