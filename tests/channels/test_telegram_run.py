"""`vaultbot run` as a real process: it will not start a Telegram bot that would refuse everyone,
and Ctrl-C or SIGTERM ends it cleanly: the message in flight is finished and its reply sent first."""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.channels.telegram.channel import SETTLED
from tests.channels.telegram_harness import RunVaultbot, bus_statuses, finish, free_port, stop, wait_until
from tests.fakes import anthropic_server as api
from tests.fakes import telegram_server as tg
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.telegram_server import FakeTelegram
from tests.helpers import SEVERAL_PROCESSES, StderrLines, subprocess_env

pytestmark = SEVERAL_PROCESSES  # several `vaultbot` processes per test

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


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_stopping_finishes_the_message_in_flight_and_sends_its_reply_before_exiting(
    tmp_path: Path, fake: FakeTelegram, fake_anthropic: FakeAnthropic, vaultbot_run: RunVaultbot, sig: signal.Signals
) -> None:
    slow_model = api.Held(api.text("Noted: call the plumber."))
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
    wait_until(slow_model.asked.is_set, "the model was asked", process)
    process.send_signal(sig)
    wait_until(lambda: log.has("stopping"), "it began to stop", process)
    slow_model.release()  # the turn in flight completes after the signal
    process.wait(timeout=40)
    errors = log.text()
    assert process.returncode == 0, errors
    assert "Traceback" not in errors and "KeyboardInterrupt" not in errors
    assert tg.DEFAULT_TOKEN not in errors and API_KEY not in errors
    # The reply reached the user before the process ended, not at the next start.
    assert fake.sent_texts == ["Noted: call the plumber."]
    db = tmp_path / "data" / "vaultbot.db"
    assert bus_statuses(db, "inbound") == ["done"]  # finished, not abandoned
    assert bus_statuses(db, "outbound:telegram") == ["done"]
    with contextlib.closing(sqlite3.connect(db)) as conn:
        [(status,)] = conn.execute("SELECT status FROM runs").fetchall()
    assert status == "completed"

    again = vaultbot_run(**env)
    polls = len(fake.calls("getUpdates"))
    wait_until(lambda: len(fake.calls("getUpdates")) > polls, "the restarted bot polled", again)
    stop(again, sig)
    assert again.returncode == 0
    assert fake.sent_texts == ["Noted: call the plumber."]  # nothing sent twice
    assert len(fake_anthropic.requests) == 1  # and nothing run twice


def test_telegram_unreachable_at_start_is_tried_again_until_it_answers_and_then_served(
    fake: FakeTelegram, vaultbot_run: RunVaultbot
) -> None:
    """Not an exit: at boot the network may come up after the bot. Each try is one line, the token in none."""
    fake.fail_next("getMe", 502, "Bad Gateway", times=2)
    process = vaultbot_run(**fake_env(fake))
    log = StderrLines(process)
    wait_until(lambda: log.has("vaultbot run: capture mode; Telegram as @vault_test_bot"), "it served", process)
    tries = [line for line in log.lines if "cannot be reached" in line and not line[:4].isdigit()]
    assert tries == [
        f"Telegram's Bot API at {fake.base_url} cannot be reached (Bad Gateway); trying again in 2 s\n",
        f"Telegram's Bot API at {fake.base_url} cannot be reached (Bad Gateway); trying again in 4 s\n",
    ]
    fake.push_update(tg.text_update("buy oat milk"))
    fake.wait_for(lambda f: len(f.sent) == 1, timeout=30)
    assert fake.sent_texts[0].startswith("Saved to Inbox/buy oat milk.md")
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=40)
    assert process.returncode == 0, log.text()
    assert "Traceback" not in log.text() and tg.DEFAULT_TOKEN not in log.text()


def test_telegram_that_never_answers_is_tried_again_and_the_bot_stops_on_a_signal(
    tmp_path: Path, vaultbot_run: RunVaultbot
) -> None:
    env = {**fake_env(None), "VAULTBOT_TELEGRAM__BASE_URL": f"http://127.0.0.1:{free_port()}/bot"}
    process = vaultbot_run(**env)
    log = StderrLines(process)
    wait_until(lambda: log.has("cannot be reached (httpx.ConnectError"), "it said Telegram cannot be reached", process)
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=40)
    assert process.returncode == 0, log.text()
    assert "Traceback" not in log.text() and tg.DEFAULT_TOKEN not in log.text()
    assert not log.has("vaultbot run:")  # it never said it served


def test_run_says_its_mode_which_bot_it_serves_as_and_the_review_address(fake: FakeTelegram, tmp_path: Path) -> None:
    port = free_port()
    env = {**fake_env(fake), "VAULTBOT_REVIEW__ENABLED": "true", "VAULTBOT_REVIEW__PORT": str(port)}
    # Standard output and error in one pipe, as a terminal shows them: their order is the person's.
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "run"],
        cwd=tmp_path,
        env=subprocess_env(**env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    try:
        said = [process.stdout.readline() for _ in range(3)]
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=40)
        rest = process.stdout.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        process.stdout.close()
    assert process.returncode == 0, rest
    # One block, in order, once it serves: what it serves, then where the page is.
    assert said[:2] == [
        "vaultbot run: capture mode; Telegram as @vault_test_bot (polling) for user ids 42; Ctrl-C to stop\n",
        "The review page:\n",
    ]
    assert said[2].startswith(f"http://127.0.0.1:{port}/?token=")
    assert rest == ""


def fake_env(fake: FakeTelegram | None) -> dict[str, str]:
    """`vaultbot run` in capture mode on the fake Telegram (or on nothing yet)."""
    env = {"VAULTBOT_TELEGRAM__TOKEN": tg.DEFAULT_TOKEN, "VAULTBOT_TELEGRAM__ALLOWED_USERS": "[42]"}
    if fake is not None:
        env |= {"VAULTBOT_TELEGRAM__BASE_URL": fake.base_url, "VAULTBOT_TELEGRAM__BASE_FILE_URL": fake.base_file_url}
    return env


def test_a_second_run_on_the_same_token_says_so_and_exits_while_the_first_serves_on(
    fake: FakeTelegram, vaultbot_run: RunVaultbot
) -> None:
    """As Telegram does, the fake ends the older of two waiting polls with 409 Conflict, so without care
    the newcomer would win. The first has polled past its start (``SETTLED``) when the second starts."""
    first = vaultbot_run(**fake_env(fake))
    first_log = StderrLines(first)
    wait_until(lambda: bool(fake.calls("getUpdates")), "the first polled", first)
    polling_since = fake.calls("getUpdates")[0].at
    wait_until(lambda: time.monotonic() - polling_since > SETTLED + 0.5, "the first polled past its start", first)

    second = vaultbot_run(**fake_env(fake), VAULTBOT_STORE__PATH="elsewhere/vaultbot.db")  # not refused by the lock
    errors = finish(second)
    assert second.returncode == 1, errors
    said = [line for line in errors.splitlines() if line.startswith("vaultbot")]
    assert said == [
        "vaultbot run: capture mode; Telegram as @vault_test_bot (polling) for user ids 42; Ctrl-C to stop",
        "vaultbot: another process is already polling @vault_test_bot's token (Telegram answered 409 Conflict), "
        "so this one stops: stop that one first to start here",
    ]
    assert fake.conflicts >= 2  # the first was ended once, and ended the second in turn

    fake.push_update(tg.text_update("buy oat milk"))
    fake.wait_for(lambda f: len(f.sent) == 1, timeout=30)
    assert fake.sent_texts[0].startswith("Saved to Inbox/buy oat milk.md")
    assert first.poll() is None  # the first serves on
    first.send_signal(signal.SIGTERM)
    first.wait(timeout=40)
    assert first.returncode == 0
    assert first_log.has("another process polled this bot token")
    for text in (errors, first_log.text()):
        assert "Traceback" not in text and tg.DEFAULT_TOKEN not in text


def test_a_second_run_on_the_same_data_folder_is_refused_before_it_polls(
    fake: FakeTelegram, vaultbot_run: RunVaultbot, tmp_path: Path
) -> None:
    first = vaultbot_run(**fake_env(fake), VAULTBOT_BUDGET__DAILY_USD="5")
    first_log = StderrLines(first)
    wait_until(lambda: first_log.has("vaultbot run:"), "the first serves", first)
    polls = len(fake.calls("getUpdates"))

    second = vaultbot_run(**fake_env(fake), VAULTBOT_BUDGET__DAILY_USD="9")
    errors = finish(second)

    assert second.returncode == 2, errors
    [said] = [line for line in errors.splitlines() if line.startswith("vaultbot")]
    assert said.startswith("vaultbot: another `vaultbot run` (process ") and "already serves the data folder" in said
    assert fake.conflicts == 0 and first.poll() is None
    # The Health page shows the configuration of the run that serves, not of the one refused.
    with contextlib.closing(sqlite3.connect(tmp_path / "data" / "vaultbot.db")) as db:
        [(config,)] = db.execute("SELECT config FROM bot_config").fetchall()
    assert json.loads(config)["budget_daily_usd"] == 5
    fake.push_update(tg.text_update("buy oat milk"))
    fake.wait_for(lambda f: len(f.sent) == 1, timeout=30)
    assert len(fake.calls("getUpdates")) > polls
    first.send_signal(signal.SIGTERM)
    first.wait(timeout=40)
    assert first.returncode == 0
