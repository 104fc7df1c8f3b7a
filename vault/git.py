"""A vault that is a git repository: one commit of the notes a run changed (``VAULTBOT_VAULT__GIT``).

Only the real ``git`` is used, as the person would: ``add`` and ``commit`` of the named notes and of
nothing else (what else is changed or staged in the repository stays as it is), with vaultbot as
author and committer, without the repository's hooks or signing (a hook could run anything), and
never a push. Blocking: call these in a thread.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

__all__ = ["GitError", "commit_notes", "is_repository"]

AUTHOR = ("vaultbot", "vaultbot@localhost")
_TIMEOUT = 60


class GitError(Exception):
    """git failed; the message is git's own last line."""


def is_repository(root: Path) -> bool:
    """Whether ``root`` is inside a git work tree (and git is installed)."""
    if shutil.which("git") is None:
        return False
    done = _git(root, "rev-parse", "--is-inside-work-tree", check=False)
    return done.returncode == 0 and done.stdout.strip() == "true"


def commit_notes(root: Path, paths: list[str], message: str) -> str | None:
    """Commit the vault-relative ``paths`` as they are on disk (a deleted one as deleted) with
    ``message``; returns the commit's id, or None when they hold nothing new to commit."""
    paths = sorted({path for path in paths if not path.startswith(".")})
    if not paths:
        return None
    _git(root, "add", "--all", "--", *paths)
    if _git(root, "diff", "--cached", "--quiet", "--", *paths, check=False).returncode == 0:
        return None
    _git(root, "-c", "commit.gpgsign=false", "commit", "--no-verify", "--quiet", "-m", message, "--", *paths)
    return _git(root, "rev-parse", "HEAD").stdout.strip()


def _git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    name, email = AUTHOR
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
        "GIT_TERMINAL_PROMPT": "0",
    }
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, env=env, timeout=_TIMEOUT, check=False
    )
    if check and done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise GitError(f"git {args[0]} failed: {last}")
    return done
