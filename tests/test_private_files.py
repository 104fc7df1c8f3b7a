"""What is private stays private: the store (every conversation, the review token), its write-ahead
log, the log file, the data folder and the vault's bookkeeping are readable by their owner only,
whatever the umask, while the person's own notes and folders keep the modes they have. Through the
real `vaultbot` command started with the common umask 022, then the files' modes read from disk."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from bot.cli.logs import send_logs
from tests.conftest import make_settings
from tests.helpers import subprocess_env

UMASK = 0o022


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def vaultbot(tmp_path: Path, *args: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess[str]:
    """``vaultbot ARGS`` in tmp_path, started with umask 022 as from a usual login shell."""
    return subprocess.run(
        [sys.executable, "-m", "bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(**env),
        umask=UMASK,
        timeout=60,
    )


def wait_for(condition: Callable[[], bool], process: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert process.poll() is None, f"vaultbot chat exited ({process.returncode}) before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.fixture
def chatting(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """`vaultbot chat` with umask 022, one message sent and filed, still running (its store open)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "chat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(),
        umask=UMASK,
    )
    try:
        assert process.stdin is not None
        process.stdin.write("the door code is 4711\n")
        process.stdin.flush()
        note = tmp_path / "data" / "vault" / "Inbox" / "the door code is 4711.md"
        wait_for(note.exists, process, "the message to be filed")
        yield process
        out, err = process.communicate(timeout=30)  # end of input: the chat ends
        assert process.returncode == 0, err
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=10)


def test_the_store_its_wal_the_log_and_the_data_folder_are_the_owners_only(
    tmp_path: Path, chatting: subprocess.Popen[str]
) -> None:
    data = tmp_path / "data"
    # While the chat runs, SQLite keeps its write-ahead log and shared memory beside the store.
    files = ["vaultbot.db", "vaultbot.db-wal", "vaultbot.db-shm", "vaultbot.log"]
    assert {name: oct(mode(data / name)) for name in files} == dict.fromkeys(files, oct(0o600))
    assert oct(mode(data)) == oct(0o700)


def test_the_vaults_bookkeeping_is_the_owners_only(tmp_path: Path, chatting: subprocess.Popen[str]) -> None:
    bookkeeping = tmp_path / "data" / "vault" / ".vaultbot"
    assert oct(mode(bookkeeping)) == oct(0o700)
    kept = {str(path.relative_to(bookkeeping)): oct(mode(path)) for path in bookkeeping.rglob("*") if path.is_file()}
    assert {"index.db", "index.db-wal", "index.db-shm"} <= set(kept)
    assert any(name.startswith("locks/") for name in kept)  # a note was written under a folder's lock
    assert kept == dict.fromkeys(kept, oct(0o600))


def test_the_persons_own_vault_keeps_its_modes(tmp_path: Path) -> None:
    notes = tmp_path / "Obsidian"
    (notes / "Projects").mkdir(parents=True)
    (notes / "Projects").chmod(0o775)
    (notes / "Projects" / "plan.md").write_text("# Plan\n")
    (notes / "Projects" / "plan.md").chmod(0o664)
    (notes / "Inbox").mkdir()
    (notes / "Inbox").chmod(0o755)
    notes.chmod(0o750)
    done = vaultbot(tmp_path, "chat", stdin="buy oat milk\n", VAULTBOT_VAULT__PATH=str(notes))
    assert done.returncode == 0, done.stderr
    assert (notes / "Inbox" / "buy oat milk.md").exists()
    assert [oct(mode(p)) for p in (notes, notes / "Projects", notes / "Projects" / "plan.md", notes / "Inbox")] == [
        oct(0o750),
        oct(0o775),
        oct(0o664),
        oct(0o755),
    ]
    assert oct(mode(notes / ".vaultbot")) == oct(0o700)


def test_files_an_older_version_left_readable_are_made_private_but_a_folder_is_only_reported(tmp_path: Path) -> None:
    assert vaultbot(tmp_path, "chat", stdin="first\n").returncode == 0
    data = tmp_path / "data"
    rotated = data / "vaultbot.log.1"
    rotated.write_text("an older warning\n")
    for path, loose in [
        (data, 0o755),
        (data / "vaultbot.db", 0o644),
        (data / "vaultbot.log", 0o644),
        (rotated, 0o644),
        (data / "vault" / ".vaultbot", 0o755),
    ]:
        path.chmod(loose)

    done = vaultbot(tmp_path, "chat", stdin="second\n")
    assert done.returncode == 0, done.stderr
    assert [oct(mode(p)) for p in (data / "vaultbot.db", data / "vaultbot.log", rotated)] == [oct(0o600)] * 3
    assert oct(mode(data / "vault" / ".vaultbot")) == oct(0o700)
    assert (
        "data/vaultbot.db was readable by other users (0644); it is now its owner's only (0600)"
        in (data / "vaultbot.log").read_text()
    )
    # The folder may be the person's own (a home, a shared folder): vaultbot never changes it...
    assert oct(mode(data)) == oct(0o755)
    # ...and the doctor says so, with the command that makes it private.
    doctor = vaultbot(tmp_path, "doctor")
    assert doctor.returncode == 1
    assert "FAIL  privacy: readable by other users of this machine: data (0755); chmod go-rwx data\n" in doctor.stdout
    data.chmod(0o700)
    doctor = vaultbot(tmp_path, "doctor")
    assert f"ok   privacy: the store, the log, their folder {data} and the vault's .vaultbot are readable" in (
        doctor.stdout
    )


def test_a_read_only_store_stays_read_only(tmp_path: Path) -> None:
    assert vaultbot(tmp_path, "chat", stdin="first\n").returncode == 0
    store = tmp_path / "data" / "vaultbot.db"
    store.chmod(0o444)
    assert vaultbot(tmp_path, "log").returncode == 0
    assert oct(mode(store)) == oct(0o400)  # others lose their access; the owner gains none


def test_a_store_kept_elsewhere_is_made_private_too(tmp_path: Path) -> None:
    store = tmp_path / "elsewhere" / "bot.db"
    store.parent.mkdir(mode=0o700)
    store.write_bytes(b"")
    store.chmod(0o644)
    # The doctor opens the store as every command does, which makes it private first.
    done = vaultbot(tmp_path, "doctor", VAULTBOT_STORE__PATH=str(store))
    assert "ok   privacy:" in done.stdout
    assert oct(mode(store)) == oct(0o600)


def test_rotated_log_files_are_created_private(tmp_path: Path) -> None:
    settings = make_settings(tmp_path)
    previous = os.umask(UMASK)
    take_away = send_logs(settings, verbose=False)
    try:
        warn = logging.getLogger("tests.rotation").warning
        for n in range(1200):  # past the 1 MB the log holds before it rotates
            warn("line %d %s", n, "x" * 1000)
    finally:
        take_away()
        os.umask(previous)
    logs = sorted(tmp_path.glob("vaultbot.log*"))
    assert [p.name for p in logs] == ["vaultbot.log", "vaultbot.log.1"]
    assert [oct(mode(p)) for p in logs] == [oct(0o600)] * 2
