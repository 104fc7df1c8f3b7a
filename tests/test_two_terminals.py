"""Two `vaultbot chat` processes open at once on one vault and store: each terminal is its own
conversation, prints exactly its own replies in order, and never one of the other's."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path

from tests.helpers import SEVERAL_PROCESSES, subprocess_env
from tests.test_cli import vaultbot

pytestmark = SEVERAL_PROCESSES  # several `vaultbot` processes per test

ROUNDS = 20
ENV = {"LOGNAME": "ann", "USER": "ann"}


def start_chat(tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "chat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=subprocess_env(**ENV),
    )


class Terminal:
    """A running chat: lines typed in, the reply lines it prints read as they come."""

    def __init__(self, tmp_path: Path) -> None:
        self.process = start_chat(tmp_path)
        self.printed: queue.Queue[str] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("vaultbot> "):
                self.printed.put(line.removeprefix("vaultbot> ").rstrip("\n"))

    def type(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def reply(self) -> str:
        return self.printed.get(timeout=30)  # a reply another chat printed never comes

    def close(self) -> tuple[int, str]:
        assert self.process.stdin is not None and self.process.stdout is not None and self.process.stderr is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=60)
        self._reader.join(timeout=10)  # it ends at the end of the output
        with self.process.stdout, self.process.stderr:
            return code, self.process.stderr.read()


def test_two_chats_at_once_each_print_exactly_their_own_replies(tmp_path: Path) -> None:
    terminals = {"alpha": Terminal(tmp_path), "bravo": Terminal(tmp_path)}
    try:
        # Both stay open to the end, so every round has two chats on one store at once.
        for i in range(ROUNDS):
            for name, terminal in terminals.items():
                terminal.type(f"{name} {i}")
            for name, terminal in terminals.items():
                # Capture mode (no key): each line is filed and its reply names the note.
                assert terminal.reply() == f"Saved to Inbox/{name} {i}.md in your vault.", f"round {i}"
    finally:
        closed = {name: terminal.close() for name, terminal in terminals.items()}
    assert closed == {"alpha": (0, ""), "bravo": (0, "")}
    assert all(terminal.printed.empty() for terminal in terminals.values())  # nothing of the other's came late

    entries = json.loads(vaultbot(tmp_path, "log", "--json", "--limit", "100").stdout)
    conversations = {
        name: {e["conversation"] for e in entries if e["summary"].startswith(f"Captured to the inbox: {name}")}
        for name in terminals
    }
    # Whichever started first is the conversation a single chat always was; the other is its own.
    assert sorted(c for found in conversations.values() for c in found) == ["terminal:ann", "terminal:ann:2"]

    # Both closed: the next chat is the first seat again, the same conversation as before.
    again = vaultbot(tmp_path, "chat", stdin="charlie\n", env=ENV)
    assert again.returncode == 0, again.stderr
    latest = json.loads(vaultbot(tmp_path, "log", "--json", "--limit", "1").stdout)
    assert latest[0]["conversation"] == "terminal:ann"
