"""A command that cannot start says why in one line and exits 2, as a bad setting does: a vault
or store path that names the wrong thing, a folder or file it may not write or read, a config
file it cannot read. Each through the real `vaultbot` command, obeying file permissions as a
user's process does (see ``bound_by_permissions``)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.channels.telegram_harness import wait_until
from tests.fakes.local_http import LocalServer
from tests.fakes.telegram_server import DEFAULT_TOKEN, FakeTelegram
from tests.helpers import bound_by_permissions, subprocess_env, vaultbot_process

STARTING = [("chat",), ("run",), ("log",), ("runs",), ("usage",), ("review", "--port", "0")]
# `run` with a channel, so that the only line is the problem (without one it says it serves none);
# nothing listens on port 9, and the problem stops it before it would ask.
CHANNEL = {
    "VAULTBOT_TELEGRAM__TOKEN": "123:token",
    "VAULTBOT_TELEGRAM__ALLOWED_USERS": "[42]",
    "VAULTBOT_TELEGRAM__BASE_URL": "http://127.0.0.1:9/bot",
}


def vaultbot(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``vaultbot ARGS`` in tmp_path with these variables (and a channel for ``run``)."""
    if args[0] == "run":
        env = {**CHANNEL, **env}
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(**env),
        preexec_fn=bound_by_permissions,
        timeout=60,
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The single line a command that could not start printed; it exited 2 and printed nothing else."""
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    return done.stderr.strip()


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[list[Path]]:
    """Paths made read-only in a test (append them after chmod); their modes are put back after,
    so the test's folder can be removed."""
    made: list[Path] = []
    yield made
    for path in made:
        path.chmod(0o755)


@pytest.mark.parametrize("command", [("chat",), ("run",)], ids=" ".join)
def test_a_vault_path_that_is_a_file_is_one_line(tmp_path: Path, command: tuple[str, ...]) -> None:
    (tmp_path / "notes").write_text("not a folder\n")
    line = one_line(vaultbot(tmp_path, *command, VAULTBOT_VAULT__PATH="notes"))
    assert line == "vaultbot: cannot use the vault notes (VAULTBOT_VAULT__PATH): notes is a file, not a folder"


def test_a_vault_path_below_a_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "notes").write_text("not a folder\n")
    line = one_line(vaultbot(tmp_path, "chat", VAULTBOT_VAULT__PATH="notes/vault"))
    assert line.endswith("notes is a file, not a folder")


def test_a_read_only_vault_is_one_line(tmp_path: Path, read_only: list[Path]) -> None:
    vault = tmp_path / "vault"
    vault.mkdir(mode=0o555)
    read_only.append(vault)
    line = one_line(vaultbot(tmp_path, "chat", VAULTBOT_VAULT__PATH="vault"))
    assert line.startswith("vaultbot: cannot use the vault vault (VAULTBOT_VAULT__PATH): ")
    assert line.endswith("Permission denied")


@pytest.mark.parametrize("capture_to", ["inbox", "daily"])
def test_a_read_only_capture_folder_stops_chat_before_a_message_is_lost(
    tmp_path: Path, read_only: list[Path], capture_to: str
) -> None:
    folder = tmp_path / "data" / "vault" / ("Inbox" if capture_to == "inbox" else "Daily")
    folder.mkdir(parents=True, mode=0o555)
    read_only.append(folder)
    done = vaultbot(tmp_path, "chat", VAULTBOT_VAULT__CAPTURE_TO=capture_to)
    assert one_line(done) == (
        "vaultbot: cannot use the vault data/vault (VAULTBOT_VAULT__PATH): "
        f"{folder} is not writable (Permission denied)"
    )


@pytest.mark.parametrize("command", STARTING, ids=" ".join)
def test_a_store_that_is_not_a_database_is_one_line_for_every_command(tmp_path: Path, command: tuple[str, ...]) -> None:
    (tmp_path / "store.db").write_text("shopping list: oat milk\n")
    line = one_line(vaultbot(tmp_path, *command, VAULTBOT_STORE__PATH="store.db"))
    assert line == "vaultbot: cannot open the store store.db (VAULTBOT_STORE__PATH): file is not a database"
    assert (tmp_path / "store.db").read_text() == "shopping list: oat milk\n"


@pytest.mark.parametrize("command", STARTING, ids=" ".join)
def test_a_store_path_that_is_a_folder_is_one_line_for_every_command(tmp_path: Path, command: tuple[str, ...]) -> None:
    (tmp_path / "store").mkdir()
    line = one_line(vaultbot(tmp_path, *command, VAULTBOT_STORE__PATH="store"))
    assert (
        line == "vaultbot: cannot open the store store (VAULTBOT_STORE__PATH): store is a folder, not a database file"
    )


def test_a_store_below_a_file_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "data").write_text("not a folder\n")
    line = one_line(vaultbot(tmp_path, "log"))
    assert (
        line == "vaultbot: cannot open the store data/vaultbot.db (VAULTBOT_STORE__PATH): data is a file, not a folder"
    )


@pytest.mark.parametrize("command", STARTING, ids=" ".join)
def test_an_unreadable_store_is_one_line(tmp_path: Path, read_only: list[Path], command: tuple[str, ...]) -> None:
    assert vaultbot(tmp_path, "log").returncode == 0  # a real store, then taken away
    store = tmp_path / "data" / "vaultbot.db"
    store.chmod(0o000)
    read_only.append(store)
    line = one_line(vaultbot(tmp_path, *command))
    assert line == (
        "vaultbot: cannot open the store data/vaultbot.db (VAULTBOT_STORE__PATH): "
        "data/vaultbot.db cannot be read (permission denied)"
    )


def test_a_read_only_store_is_read_by_log_but_refused_by_chat(tmp_path: Path, read_only: list[Path]) -> None:
    assert vaultbot(tmp_path, "chat").returncode == 0
    store = tmp_path / "data" / "vaultbot.db"
    store.chmod(0o444)
    read_only.append(store)
    assert vaultbot(tmp_path, "log").returncode == 0
    done = vaultbot(tmp_path, "chat")
    assert one_line(done) == (
        "vaultbot: cannot open the store data/vaultbot.db (VAULTBOT_STORE__PATH): data/vaultbot.db is read-only"
    )


@pytest.mark.parametrize(
    ("content", "mode", "line"),
    [
        ("[vault]\npath = 'notes'\n", 0o000, "vaultbot: cannot read settings.toml: Permission denied"),
        ("[vault\n", 0o644, "vaultbot: cannot read settings.toml: Expected ']' at the end of a table declaration"),
    ],
    ids=["unreadable", "not-toml"],
)
def test_a_config_file_that_cannot_be_read_is_one_line(
    tmp_path: Path, read_only: list[Path], content: str, mode: int, line: str
) -> None:
    config = tmp_path / "settings.toml"
    config.write_text(content)
    config.chmod(mode)
    read_only.append(config)
    assert one_line(vaultbot(tmp_path, "chat", VAULTBOT_CONFIG="settings.toml")).startswith(line)


def test_a_default_config_file_that_is_a_folder_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "config" / "vaultbot.toml").mkdir(parents=True)
    assert one_line(vaultbot(tmp_path, "chat")) == "vaultbot: cannot read config/vaultbot.toml: it is not a file"


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port another program is listening on."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        yield taken.getsockname()[1]


def test_the_review_page_on_a_port_in_use_is_one_line(tmp_path: Path, taken_port: int) -> None:
    line = one_line(vaultbot(tmp_path, "review", "--port", str(taken_port)))
    assert line == f"vaultbot: cannot serve the review page on 127.0.0.1:{taken_port}: Address already in use"


def test_run_with_the_review_page_on_a_port_in_use_is_one_line(tmp_path: Path, taken_port: int) -> None:
    done = vaultbot(tmp_path, "run", VAULTBOT_REVIEW__ENABLED="true", VAULTBOT_REVIEW__PORT=str(taken_port))
    assert one_line(done) == (
        f"vaultbot: cannot serve the review page on 127.0.0.1:{taken_port}: Address already in use"
    )


def test_run_with_the_webhook_on_a_port_in_use_is_one_line(tmp_path: Path, taken_port: int) -> None:
    with FakeTelegram() as telegram:
        done = vaultbot(
            tmp_path,
            "run",
            VAULTBOT_TELEGRAM__TOKEN=DEFAULT_TOKEN,
            VAULTBOT_TELEGRAM__BASE_URL=telegram.base_url,
            VAULTBOT_TELEGRAM__BASE_FILE_URL=telegram.base_file_url,
            VAULTBOT_TELEGRAM__WEBHOOK_URL="https://bot.example.org/telegram",
            VAULTBOT_TELEGRAM__WEBHOOK_SECRET="s" * 32,
            VAULTBOT_TELEGRAM__WEBHOOK_PORT=str(taken_port),
        )
    assert one_line(done) == (
        f"vaultbot: cannot serve the Telegram webhook on 127.0.0.1:{taken_port}: Address already in use"
    )
    assert DEFAULT_TOKEN not in done.stderr


# A token of @BotFather's shape that the fake Telegram does not know: its secret half must never show.
REFUSED_TOKEN = "987654321:AAHsecret-never-shown_0123456789"


@pytest.mark.parametrize(
    ("case", "says"),
    [
        ("refused token", "refused the bot token (Unauthorized): check VAULTBOT_TELEGRAM__TOKEN"),
        ("address without /bot", "VAULTBOT_TELEGRAM__BASE_URL: expected a Bot API address ending in /bot"),
        ("not the Bot API", "refused the bot token (Not Found)"),
        ("token in the address", "the bot token goes in VAULTBOT_TELEGRAM__TOKEN, not in the address"),
        ("address that is no URL", "VAULTBOT_TELEGRAM__BASE_URL: expected a Bot API address ending in /bot"),
    ],
)
def test_a_token_or_address_telegram_will_not_serve_is_one_line_without_the_token(
    tmp_path: Path, case: str, says: str
) -> None:
    with FakeTelegram() as telegram:
        address = {
            "refused token": telegram.base_url,
            "address without /bot": telegram.base_url.removesuffix("/bot"),
            "not the Bot API": telegram.base_url.replace("/bot", "/other/bot"),
            "token in the address": f"{telegram.base_url}{REFUSED_TOKEN}",
            "address that is no URL": telegram.base_url.removeprefix("http://"),
        }[case]
        done = vaultbot(
            tmp_path,
            "run",
            VAULTBOT_TELEGRAM__TOKEN=REFUSED_TOKEN,
            VAULTBOT_TELEGRAM__BASE_URL=address,
            VAULTBOT_TELEGRAM__BASE_FILE_URL=telegram.base_file_url,
        )
    line = one_line(done)
    assert line.startswith("vaultbot: ") and says in line
    log = tmp_path / "data" / "vaultbot.log"
    logged = log.read_text(encoding="utf-8") if log.exists() else ""
    assert REFUSED_TOKEN.split(":")[1] not in done.stderr + done.stdout + logged


def test_doctor_asks_telegram_who_the_bot_is_and_never_shows_the_token(tmp_path: Path) -> None:
    with FakeTelegram() as telegram:
        env = {**CHANNEL, "VAULTBOT_TELEGRAM__BASE_URL": telegram.base_url}
        accepted = vaultbot(tmp_path, "doctor", **{**env, "VAULTBOT_TELEGRAM__TOKEN": DEFAULT_TOKEN})
        refused = vaultbot(tmp_path, "doctor", **{**env, "VAULTBOT_TELEGRAM__TOKEN": REFUSED_TOKEN})
        asked = [request.method for request in telegram.requests]
    unreachable = vaultbot(tmp_path, "doctor", **CHANNEL)  # nothing listens on port 9
    assert asked == ["getMe", "getMe"]
    [ok] = [line for line in accepted.stdout.splitlines() if "telegram:" in line]
    assert ok == (
        f"ok   telegram: @vault_test_bot via {telegram.base_url}: token accepted; serving user ids 42; groups off"
    )
    [fail] = [line for line in refused.stdout.splitlines() if "telegram:" in line]
    assert fail.startswith(f"FAIL  telegram: Telegram's Bot API at {telegram.base_url} refused the bot token")
    assert refused.returncode == 1
    [down] = [line for line in unreachable.stdout.splitlines() if "telegram:" in line]
    assert down.startswith("FAIL  telegram: Telegram's Bot API at http://127.0.0.1:9/bot cannot be reached (")
    for done in (accepted, refused, unreachable):
        assert "Traceback" not in done.stderr
        assert REFUSED_TOKEN.split(":")[1] not in done.stdout + done.stderr
        assert DEFAULT_TOKEN.split(":")[1] not in done.stdout + done.stderr


class NotTheBotApi(BaseHTTPRequestHandler):
    """Not Telegram: a web page for every request, echoing the address asked for (the token is in it)."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = f"<html><body><h1>Welcome!</h1><p>You asked for {self.path}</p>{'<p>more</p>' * 5000}</body></html>"
        status = 502 if "gateway" in self.path else 200
        self.send_response(status)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body.encode())))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def not_the_bot_api() -> Iterator[str]:
    server = LocalServer(("127.0.0.1", 0), NotTheBotApi)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_web_page_where_the_bot_api_should_be_is_one_short_line_and_the_token_is_in_no_log(
    tmp_path: Path, not_the_bot_api: str
) -> None:
    done = vaultbot(
        tmp_path, "run", VAULTBOT_TELEGRAM__TOKEN=REFUSED_TOKEN, VAULTBOT_TELEGRAM__BASE_URL=f"{not_the_bot_api}/bot"
    )
    line = one_line(done)
    assert line.startswith(f"vaultbot: {not_the_bot_api}/bot does not answer as Telegram's Bot API does (")
    assert len(line) < 400
    secret = REFUSED_TOKEN.split(":")[1]
    assert secret not in done.stderr
    assert secret not in (tmp_path / "data" / "vaultbot.log").read_text(encoding="utf-8")


def test_an_error_page_in_the_bot_apis_place_is_tried_again_in_a_short_line_without_the_token(
    tmp_path: Path, not_the_bot_api: str
) -> None:
    """A 502 page is what Telegram's own proxy answers in an outage: tried again, never a traceback."""
    env = {
        **CHANNEL,
        "VAULTBOT_TELEGRAM__TOKEN": REFUSED_TOKEN,
        "VAULTBOT_TELEGRAM__BASE_URL": f"{not_the_bot_api}/gateway/bot",
    }
    with vaultbot_process(tmp_path, "run", **env) as (process, log):
        wait_until(lambda: log.has("trying again in 2 s"), "it said it tries again", process)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=40)
    said = log.text()
    [line] = [line for line in said.splitlines() if "trying again" in line]
    assert line.startswith(f"Telegram's Bot API at {not_the_bot_api}/gateway/bot cannot be reached (Bad Gateway (502)")
    assert len(line) < 400 and process.returncode == 0
    assert "Traceback" not in said and REFUSED_TOKEN.split(":")[1] not in said
