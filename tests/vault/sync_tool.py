"""A stand-in for Syncthing, run as a process of its own by tests/vault/test_synced_vault.py.

It replaces two notes again and again with "the phone's" version, as a sync tool does: the new
file staged beside the note and swapped in whole (``renameat2(RENAME_EXCHANGE)``), never written in
place. When what it swapped out is not what it had read (the bot wrote in between), it keeps that
as a conflict copy named as Syncthing names them, as Syncthing does. Each time it reads a note it
checks that the note is not empty and that any version the bot put there was built on the latest
version the phone wrote (else the bot replaced text it had not seen), and prints what it found.

Usage: sync_tool.py VAULT ROUNDS
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import re
import sys
import tempfile
import time
from pathlib import Path

_LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_BASED_ON = re.compile(r"based on phone version (\d+)")
_PHONE = re.compile(r"phone version (\d+)")


def exchange(a: Path, b: Path) -> None:
    if _LIBC.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(b))


def swap(note: Path, data: bytes, read: bytes, copies: int) -> int:
    """Swap ``data`` in; keep what it displaced as a conflict copy unless that is ``read``."""
    fd, name = tempfile.mkstemp(prefix=".syncthing.", dir=note.parent)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)
    exchange(Path(name), note)
    displaced = Path(name).read_bytes()
    if displaced == read:
        os.unlink(name)
        return copies
    copies += 1
    os.rename(name, note.with_name(f"{note.stem}.sync-conflict-20261123-1405{copies:02d}-ABCDEFG{note.suffix}"))
    return copies


def _still(note: Path, read: bytes) -> bool:
    """Whether ``note`` keeps holding ``read`` for a while. The bot's exchange shows its text for the
    instant before it sees the phone's newer file and swaps that back, so a stale version counts as a
    replacement only if it stays; the swap back is one system call away, seconds are a wide margin."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if note.read_bytes() != read:
            return False
        os.sched_yield()
    return True


def main(vault: Path, rounds: int) -> None:
    shared, daily = vault / "Shared.md", vault / "Daily" / "2026-11-23.md"
    latest = 0  # the last phone version swapped into Shared.md
    copies = 0
    problems: list[str] = []
    print("ready", flush=True)
    for k in range(1, rounds + 1):
        for note in (shared, daily):
            read = note.read_bytes()
            if not read:
                problems.append(f"{note.name} was empty")
            text = read.decode()
            if note == shared:
                based = _BASED_ON.findall(text)
                if based and int(based[-1]) != latest and _still(note, read):
                    problems.append(f"the bot replaced phone version {latest} unseen (built on {based[-1]})")
                new = f"phone version {k}\n".encode()
                copies = swap(note, new, read, copies)
                latest = k
            else:
                copies = swap(note, read + f"\nphone line {k}\n".encode(), read, copies)
    print("done", copies, "|".join(problems), flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
