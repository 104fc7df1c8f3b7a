"""``vaultbot backup [DEST] [--with-secrets]``, ``vaultbot backup --verify ARCHIVE`` and
``vaultbot restore ARCHIVE``: each says in one line what it did, or why it would not."""

from __future__ import annotations

from pathlib import Path

from bot.backup import Backup, Manifest, Restored, restore, take_backup, verify
from bot.clock import Clock
from bot.settings import Settings

__all__ = ["back_up", "checked", "restore_from"]


async def back_up(settings: Settings, dest: Path | None, *, with_secrets: bool) -> Backup:
    """Write a backup into ``dest`` (default: the backup folder) while anything else goes on."""
    now = Clock(settings.zone).now()
    return await take_backup(settings, dest or settings.backup.path, now, with_secrets=with_secrets)


async def checked(archive: Path) -> str:
    """Check every hash of ``archive``; what to say when all match."""
    manifest: Manifest = await verify(archive)
    about = manifest.about
    secrets = "with secrets" if about.get("with_secrets") else "no secrets"
    return (
        f"{archive} is whole: {len(manifest.files):,} files, {manifest.size:,} bytes, every SHA-256 matches "
        f"(taken {about.get('created_at', 'at an unknown time')}, {secrets})."
    )


async def restore_from(settings: Settings, archive: Path) -> str:
    """Restore ``archive`` into the empty store and vault; what to say."""
    restored: Restored = await restore(settings, archive)
    return restored.describe(settings)
