"""The system prompt: the user's file if there is one, else the one vaultbot ships."""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def load_system_prompt(path: Path) -> str:
    """Read the prompt at ``path``, falling back to the built-in default when it does not exist."""
    if path.is_file():
        return path.read_text(encoding="utf-8")
    return resources.files("bot").joinpath("defaults/system_prompt.md").read_text(encoding="utf-8")
