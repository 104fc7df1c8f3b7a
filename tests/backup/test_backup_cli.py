"""`vaultbot backup`, `backup --verify` and `restore` as a person runs them: real processes, folders and stores."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path

from tests.helpers import SEVERAL_PROCESSES, subprocess_env, vaultbot_process

pytestmark = SEVERAL_PROCESSES

TOKEN = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
CONFIG = f"""# my settings
timezone = "Europe/Berlin"
[telegram]
token = "{TOKEN}"   # from @BotFather
allowed_users = [42]
[mcp.servers.search]
url = "http://127.0.0.1:9000/mcp"
headers = {{ Authorization = 'Bearer sk-mcp-secret-value' }}
"""


def vaultbot(cwd: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin, capture_output=True, text=True, cwd=cwd, env=subprocess_env(), timeout=60,
    )  # fmt: skip


def old_machine(tmp_path: Path) -> Path:
    home = tmp_path / "old"
    (home / "config").mkdir(parents=True)
    (home / "config" / "vaultbot.toml").write_text(CONFIG)
    (home / ".env").write_text("ANTHROPIC_API_KEY=\n")  # blank: still capture mode, but a secrets file
    done = vaultbot(home, "chat", stdin="buy oat milk\ncall mum\n")
    assert done.returncode == 0, done.stderr
    return home


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def test_a_backup_moves_to_a_new_machine_where_runs_log_and_undo_are_as_they_were(tmp_path: Path) -> None:
    home = old_machine(tmp_path)
    done = vaultbot(home, "backup", "out.tar.gz")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Wrote out.tar.gz: ") and "no secrets" in done.stdout and " KB" in done.stdout
    held = members(home / "out.tar.gz")
    assert {"store/vaultbot.db", "vault/Inbox/buy oat milk.md", "config/vaultbot.toml", "manifest.json"} <= set(held)
    assert "secrets/.env" not in held
    config = held["config/vaultbot.toml"].decode()
    assert TOKEN not in config and "sk-mcp-secret-value" not in config
    assert "# my settings" in config and "allowed_users = [42]" in config

    new = tmp_path / "new"
    checked = vaultbot(new, "backup", "--verify", str(home / "out.tar.gz"))
    assert checked.returncode == 0 and "every SHA-256 matches" in checked.stdout, checked.stderr
    restored = vaultbot(new, "restore", str(home / "out.tar.gz"))
    assert restored.returncode == 0, restored.stderr
    assert "Restored" in restored.stdout
    assert (new / "config" / "vaultbot.toml").read_text() == config

    runs = json.loads(vaultbot(new, "runs", "--json").stdout)
    assert [run["status"] for run in runs] == ["completed", "completed"]
    log = json.loads(vaultbot(new, "log", "--json").stdout)
    assert {entry["summary"] for entry in log} >= {"Captured to the inbox: buy oat milk"}
    chat = vaultbot(new, "chat", stdin="/status\n/undo\nand then this\n")
    assert chat.returncode == 0, chat.stderr
    assert (
        "capture mode" in chat.stdout.lower()
        and "Undid run" in chat.stdout
        and (new / "data/vault/.trash/Inbox/call mum.md").exists()
    )
    assert (new / "data/vault/Inbox/and then this.md").exists()
    assert len(json.loads(vaultbot(new, "runs", "--json").stdout)) == 5  # /status, /undo and the new note


def test_with_secrets_the_archive_holds_the_env_file_and_the_whole_config(tmp_path: Path) -> None:
    home = old_machine(tmp_path)
    done = vaultbot(home, "backup", "--with-secrets", "out.tar.gz")
    assert done.returncode == 0 and "with secrets" in done.stdout, done.stderr
    held = members(home / "out.tar.gz")
    assert held["config/vaultbot.toml"].decode() == CONFIG and held["secrets/.env"] == b"ANTHROPIC_API_KEY=\n"


def test_refusals_are_one_line_each(tmp_path: Path) -> None:
    home = old_machine(tmp_path)
    assert vaultbot(home, "backup", "out.tar.gz").returncode == 0
    archive = home / "out.tar.gz"
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(archive.read_bytes()[:-300])

    fresh = tmp_path / "fresh"
    for cwd, args, status, words in [
        (home, ("restore", str(archive)), 2, "already exists"),  # the old machine's own store
        (fresh, ("restore", str(cut)), 1, "truncated or corrupt"),
        (fresh, ("backup", "--verify", str(cut)), 1, "truncated or corrupt"),
        (fresh, ("backup", "--verify", str(tmp_path / "nothing.tar.gz")), 1, "does not exist"),
        (home, ("backup", "out.tar.gz"), 1, "already exists; a backup never replaces a file"),
    ]:
        done = vaultbot(cwd, *args)
        assert done.returncode == status, (args, done.stderr)
        assert done.stderr.count("\n") == 1 and words in done.stderr and done.stderr.startswith("vaultbot: ")
    assert not (fresh / "data" / "vaultbot.db").exists()
    assert not (fresh / "data" / "vault").exists() or not any((fresh / "data" / "vault").iterdir())


async def test_vaultbot_backup_while_vaultbot_run_serves_a_soak_loses_nothing(tmp_path: Path) -> None:
    from bot.bus import INBOUND, Bus, InboundMessage, Sender
    from bot.db import Database

    home = tmp_path / "serving"
    home.mkdir()
    texts = [f"soak note {n:03d}" for n in range(150)]
    with vaultbot_process(home, "run") as (served, log):
        await _until(lambda: log.has("vaultbot run:"))
        db = await Database.open(home / "data" / "vaultbot.db")  # another process publishing, as `vaultbot chat` does
        try:
            bus = Bus(db)

            async def publish(batch: list[str]) -> None:
                for text in batch:
                    message = InboundMessage(
                        channel="terminal", conversation="terminal:ann", sender=Sender(id="ann"), text=text
                    )
                    await bus.publish(INBOUND, message, conversation="terminal:ann")
                    await asyncio.sleep(0.005)

            await publish(texts[:30])
            sending = asyncio.create_task(publish(texts[30:]))
            backing = await asyncio.to_thread(vaultbot, home, "backup", "soak.tar.gz")
            await sending
        finally:
            await db.close()
        inbox = home / "data" / "vault" / "Inbox"
        await _until(lambda: len(list(inbox.glob("*.md"))) == len(texts), timeout=120)
        served.send_signal(signal.SIGTERM)
        assert served.wait(timeout=60) == 0, log.text()
    assert backing.returncode == 0 and "Wrote soak.tar.gz" in backing.stdout, backing.stderr
    assert {p.stem for p in inbox.glob("*.md")} == set(texts)  # none lost while the backup ran

    checked = vaultbot(home, "backup", "--verify", "soak.tar.gz")
    assert checked.returncode == 0, checked.stderr
    fresh = tmp_path / "fresh"
    assert vaultbot(fresh, "restore", str(home / "soak.tar.gz")).returncode == 0
    log = json.loads(vaultbot(fresh, "log", "--json", "--limit", "1000").stdout)
    captured = {entry["summary"].removeprefix("Captured to the inbox: ") for entry in log}
    filed = {p.stem for p in (fresh / "data" / "vault" / "Inbox").glob("*.md")}
    assert captured and captured <= filed  # every note the restored log says was filed is in the restored vault


async def _until(condition: Callable[[], bool], timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.05)
