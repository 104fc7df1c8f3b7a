"""New notes take the vault folder's own permissions (a vault another user's sync reads gets notes it can
read), an existing note keeps its own, and the vault's bookkeeping stays its owner's alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vault import PRIVATE_DIR, Vault


def mode(path: Path) -> int:
    return path.stat().st_mode & 0o777


@pytest.mark.parametrize(("folder", "note"), [(0o755, 0o644), (0o750, 0o640), (0o700, 0o600), (0o775, 0o664)])
def test_a_new_note_follows_the_vault_folders_permissions(tmp_path: Path, folder: int, note: int) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    root.chmod(folder)
    old = os.umask(0o077)  # the process's umask is not what decides: the vault folder is
    try:
        with Vault(root, max_staleness=0) as notes:
            created = notes.write("Inbox", "Oat milk", "buy oat milk").path
            saved = notes.save_attachment("Attachments", "photo.jpg", b"\xff\xd8\xff")
    finally:
        os.umask(old)
    assert mode(root / created) == note
    assert mode(root / saved) == note
    assert mode(root / PRIVATE_DIR) == 0o700


def test_an_edited_note_keeps_its_own_permissions(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir(mode=0o755)
    with Vault(root, max_staleness=0) as notes:
        path = root / notes.write("Inbox", "Plan", "first").path
        path.chmod(0o640)
        notes.write("Inbox", "Plan", "second", mode="append")
        assert mode(path) == 0o640
        notes.write("Inbox", "Plan", "third", mode="replace")
        assert mode(path) == 0o640
