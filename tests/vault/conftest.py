"""Fixtures for the vault tests: a vault under tmp_path and an empty sibling folder it must never touch."""

from __future__ import annotations

from pathlib import Path

import pytest

from vault import Vault


@pytest.fixture
def notes(tmp_path: Path) -> Vault:
    return Vault(tmp_path / "vault")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the vault; anything appearing here means a write escaped."""
    path = tmp_path / "outside"
    path.mkdir()
    return path
