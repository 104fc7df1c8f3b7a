"""Helpers shared by the tests: readers over the real database, a step recorder, disk faults for
the real vault, another process's lock on the database, the environment for a `vaultbot`
subprocess, and a process's peak memory from /proc."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import vault.files
import vault.vault
from bot.app import App
from bot.bus import OutboundMessage

ROOT = Path(__file__).resolve().parents[1]
# linux/prctl.h and linux/capability.h
PR_CAPBSET_DROP = 24
CAP_DAC_OVERRIDE = 1
CAP_DAC_READ_SEARCH = 2
# Loaded here, not in the forked child, where the loader's lock may be held by a thread that was not copied.
_LIBC = ctypes.CDLL(None, use_errno=True)
# Variables from the developer's shell that must never reach a test.
OWN_PREFIXES = ("VAULTBOT_", "ANTHROPIC_")
# In place of pytest-timeout's 60 s, for a test that starts `vaultbot` processes one after another
# (``pytestmark = SEVERAL_PROCESSES``): a start costs 1-2 s of CPU on an idle 2-core machine and many
# times that on a busy one. Still a bound, so a hang fails; each wait inside has its own, shorter one.
SEVERAL_PROCESSES = pytest.mark.timeout(180)


def subprocess_env(**variables: str) -> dict[str, str]:
    """The environment for a `vaultbot` subprocess: this checkout importable, none of the
    developer's vaultbot or Anthropic settings, search by meaning off (no model to load), plus ``variables``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(OWN_PREFIXES)}
    return {**clean, "PYTHONPATH": str(ROOT), "VAULTBOT_VAULT__SEARCH_BY_MEANING": "false", **variables}


def peak_memory_mb(pid: int | None = None) -> float:
    """The peak resident memory (VmHWM, from /proc) of process ``pid`` (default: this one) so far, in MB."""
    for line in Path(f"/proc/{pid or os.getpid()}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc")


def reset_peak_memory() -> None:
    """Start this process's VmHWM again from its present size (Linux 4.0+), so earlier tests' peaks hide none."""
    Path("/proc/self/clear_refs").write_text("5")


def ctrl_c_as_at_a_terminal() -> None:
    """For ``subprocess``'s ``preexec_fn``: Ctrl-C (SIGINT) reaches the child as it reaches a program
    started at a terminal. A test run started as a background job of a script inherits SIGINT
    ignored, and so would every child, whatever the program does with Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def bound_by_permissions() -> None:
    """For ``subprocess``'s ``preexec_fn``: the child obeys file permissions as a user's process
    does. Run as root, it would write a folder whatever its mode says (CAP_DAC_OVERRIDE); it drops
    that capability and CAP_DAC_READ_SEARCH from its bounding set, so the program it runs starts
    without them. Run as anyone else, there is nothing to drop."""
    if os.geteuid() != 0:
        return
    for capability in (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH):
        if _LIBC.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


class StderrLines:
    """Reads a process's standard error as it comes, so a test can wait for a log line."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stderr is not None, "start the process with stderr=subprocess.PIPE"
        for line in process.stderr:
            self.lines.append(line)

    def has(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def text(self) -> str:
        self._thread.join(timeout=10)
        return "".join(self.lines)


@contextlib.contextmanager
def vaultbot_process(
    cwd: Path, *args: str, stdout: int = subprocess.DEVNULL, **env: str
) -> Iterator[tuple[subprocess.Popen[str], StderrLines]]:
    """``vaultbot ARGS`` started in ``cwd`` with ``env``, its standard error read as it comes. Killed at
    the end if still running; then its standard error is read to the end and its pipes are closed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", *args],
        cwd=cwd,
        env=subprocess_env(**env),
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
    )
    log = StderrLines(process)
    try:
        yield process, log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=10)
        log.text()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


class Steps:
    """A step recorder that keeps what the loop records, for assertions."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.events: list[tuple[str, dict[str, Any], str | None]] = []

    async def step(self, **fields: Any) -> None:
        self.steps.append(fields)

    async def event(self, type: str, data: dict[str, Any], *, notice: str | None = None) -> None:
        self.events.append((type, data, notice))

    async def flush(self) -> None:
        """Nothing is held: each step is kept as it is recorded."""


async def outbox(app: App) -> list[OutboundMessage]:
    """Every outbound message queued so far, in order."""
    rows = await app.db.fetchall("SELECT payload FROM bus_messages WHERE topic LIKE 'outbound%' ORDER BY id")
    return [OutboundMessage.model_validate_json(row["payload"]) for row in rows]


async def run_inbox(app: App) -> None:
    """Let the runner worker handle everything on the inbound topic, then return."""
    await app.runner_worker().run(burst=True)


class DiskFaults:
    """Makes the vault's low-level file write (``vault.files.staged``: a temporary file written and
    fsynced before it is renamed or linked into place) raise ``error``, as a full or failing disk
    would: the first ``times`` writes, or every one when ``times`` is None. Everything above it
    (the real vault, tools, dispatcher) runs as it does for users."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, *, times: int | None = None, error: OSError | None = None
    ) -> None:
        self.failed: list[Path] = []
        self._times = times
        self._error = error or OSError(errno.ENOSPC, "No space left on device")
        real = vault.files.staged

        @contextlib.contextmanager
        def staged(directory: Path, data: bytes, mode: int | None = None) -> Iterator[Path]:
            if self._times is None or len(self.failed) < self._times:
                self.failed.append(directory)
                raise self._error
            with real(directory, data, mode) as file:
                yield file

        # vault.vault imported the name; vault.files' own write_atomic looks it up in its module.
        monkeypatch.setattr(vault.files, "staged", staged)
        monkeypatch.setattr(vault.vault, "staged", staged)


class WriteLock:
    """Another process's write lock on the SQLite file at ``path`` (``BEGIN EXCLUSIVE`` on a second
    connection), held until :meth:`release`. Meanwhile the bot's writes wait out their busy timeout
    and fail with "database is locked"; its reads go on (WAL)."""

    def __init__(self, path: Path) -> None:
        self._conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self._conn.execute("BEGIN EXCLUSIVE")  # waits (5 s at most) for a write of the bot's to end
        self.held = True

    def release(self) -> None:
        """Let go of the lock (again: nothing)."""
        if self.held:
            self._conn.execute("ROLLBACK")
            self._conn.close()
            self.held = False
