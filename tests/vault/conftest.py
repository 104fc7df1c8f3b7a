"""Fixtures for the vault tests: a vault under tmp_path and an empty sibling folder it must never touch."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from vault import Vault


@pytest.fixture
def notes(tmp_path: Path) -> Iterator[Vault]:
    """A vault that checks the disk before every answer, as these tests change files behind its back."""
    with Vault(tmp_path / "vault", max_staleness=0) as vault:
        yield vault


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder next to the vault; anything appearing here means a write escaped."""
    path = tmp_path / "outside"
    path.mkdir()
    return path
