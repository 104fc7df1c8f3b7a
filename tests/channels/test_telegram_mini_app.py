"""The review page in Telegram, through `vaultbot run` as a real process and the real
python-telegram-bot against the fake Bot API: each allowlisted user's chat gets a "Review" menu
button that opens the Mini App, and /review answers with a button that opens it (a terminal, which
has no buttons, shows its address)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.channels.telegram_harness import RunVaultbot, stop, wait_until
from tests.fakes import telegram_server as tg
from tests.fakes.telegram_server import FakeTelegram
from tests.helpers import subprocess_env

PUBLIC = "https://review.example.com"
MINI_APP = {"url": f"{PUBLIC}/sign-in/telegram"}


def env(fake: FakeTelegram, **more: str) -> dict[str, str]:
    return {
        "VAULTBOT_TELEGRAM__TOKEN": tg.DEFAULT_TOKEN,
        "VAULTBOT_TELEGRAM__ALLOWED_USERS": "[42, 77]",
        "VAULTBOT_TELEGRAM__BASE_URL": fake.base_url,
        "VAULTBOT_TELEGRAM__BASE_FILE_URL": fake.base_file_url,
        **more,
    }


def test_with_a_public_address_each_allowlisted_chat_gets_a_review_menu_button_and_review_a_button(
    fake: FakeTelegram, vaultbot_run: RunVaultbot
) -> None:
    process = vaultbot_run(**env(fake, VAULTBOT_REVIEW__PUBLIC_URL=PUBLIC + "/"))
    wait_until(lambda: len(fake.menu_buttons) == 2, "both menu buttons were set", process)
    assert fake.menu_buttons == {
        42: {"type": "web_app", "text": "Review", "web_app": MINI_APP},
        77: {"type": "web_app", "text": "Review", "web_app": MINI_APP},
    }

    fake.push_update(tg.text_update("/review"))
    wait_until(lambda: bool(fake.sent), "the answer to /review", process)
    [answer] = fake.sent
    assert answer["chat_id"] == 42 and "Tap Review to open it" in answer["text"]
    assert answer["reply_markup"] == {"inline_keyboard": [[{"text": "Review", "web_app": MINI_APP}]]}
    errors = stop(process)
    assert process.returncode == 0, errors
    assert tg.DEFAULT_TOKEN not in errors


def test_without_a_public_address_the_menu_is_telegrams_default_and_review_has_no_button(
    fake: FakeTelegram, vaultbot_run: RunVaultbot
) -> None:
    process = vaultbot_run(**env(fake))
    wait_until(lambda: len(fake.menu_buttons) == 2, "both menu buttons were set", process)
    # A "Review" button left by an earlier run with a public address leads nowhere now: it is reset.
    assert fake.menu_buttons == {42: {"type": "default"}, 77: {"type": "default"}}

    fake.push_update(tg.text_update("/review"))
    wait_until(lambda: bool(fake.sent), "the answer to /review", process)
    [answer] = fake.sent
    assert "not being served" in answer["text"] and answer["reply_markup"] is None
    stop(process)


def test_a_chat_telegram_will_not_set_a_button_for_does_not_stop_the_others(
    fake: FakeTelegram, vaultbot_run: RunVaultbot
) -> None:
    fake.fail_next("setChatMenuButton", 400, "Bad Request: chat not found")
    process = vaultbot_run(**env(fake, VAULTBOT_REVIEW__PUBLIC_URL=PUBLIC))
    wait_until(lambda: 77 in fake.menu_buttons, "the second chat's menu button", process)
    assert 42 not in fake.menu_buttons
    fake.push_update(tg.text_update("/review"))
    wait_until(lambda: bool(fake.sent), "the answer to /review", process)
    errors = stop(process)
    assert "could not set the menu button of chat 42: chat not found" in errors.lower()


def test_review_in_a_terminal_shows_where_the_button_leads(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bot", "chat"],
        input="/review\n",
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(VAULTBOT_REVIEW__PUBLIC_URL=PUBLIC),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == [
        "vaultbot> The review page: everything I did, step by step. Tap Review to open it.",
        f"          [Review] {PUBLIC}/sign-in/telegram",
    ]
