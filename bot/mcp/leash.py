"""Runs a stdio MCP server so that it dies with vaultbot, even when vaultbot is SIGKILLed.

Usage: ``python -I -S leash.py PARENT_PID COMMAND [ARG…]``. Standalone on purpose (the standard
library only, no import of ``bot``): it starts in a few milliseconds.

The SDK starts each server as the leader of a new session, so a SIGKILLed vaultbot would leave it
running forever, reparented to init. This process sits between them: it asks the kernel for a
SIGTERM when its parent dies (``PR_SET_PDEATHSIG``; elsewhere it watches its parent id), then runs
the server in its own process group and, on that signal, ends the whole group: the server and
whatever it started (``npx`` starts ``node``). Its stdin and stdout are the server's, inherited, so
nothing is copied on the way. A clean stop is the SDK's: stdin closed, then the group signalled;
when the server exits, what it left behind in its group is ended too.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
GRACE_SECONDS = 2.0


def main(argv: list[str]) -> int:
    """Run ``argv[2:]`` until it exits, or until the process ``argv[1]`` (vaultbot) is gone."""
    parent, command = int(argv[1]), argv[2:]
    signal.signal(signal.SIGTERM, _end_group)
    _die_with(parent)
    try:
        server = subprocess.Popen(command)
    except OSError as exc:
        print(f"cannot start {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    # Our copies of the pipes would keep vaultbot's ends open after the server has gone.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    server.wait()
    # What the server started goes with it, as the SDK's own stop would take it: the process group, us included.
    _end_group(signal.SIGTERM, None)
    return server.returncode  # reached only if the group could not be signalled


def _die_with(parent: int) -> None:
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    else:
        threading.Thread(target=_watch, args=(parent,), daemon=True).start()
    if os.getppid() != parent:  # it died before the request was made
        _end_group(signal.SIGTERM, None)


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGTERM)


def _end_group(signum: int, frame: object) -> None:
    """The server and all it started get SIGTERM, then SIGKILL after a grace period (and so do we)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    while time.monotonic() < deadline:
        try:
            if os.waitpid(-1, os.WNOHANG) == (0, 0):
                time.sleep(0.02)
                continue
        except ChildProcessError:
            break
    os.killpg(0, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
