"""Backups and restores: one consistent archive of the store, the vault and the person's config
(:mod:`bot.backup.take`), its manifest of hashes (:mod:`bot.backup.archive`), restoring it into
empty folders (:mod:`bot.backup.restore`), and the backups ``vaultbot run`` takes on its own
(:mod:`bot.backup.schedule`). Beside them, what keeps a synced vault whole: its git history, a
commit per run (:mod:`bot.backup.history`), and the conflict copies a sync tool left, said once in
chat (:mod:`bot.backup.conflicts`)."""

from __future__ import annotations

from bot.backup.archive import MANIFEST, Manifest
from bot.backup.conflicts import ConflictNotices
from bot.backup.errors import BackupError, BackupFailed, BadArchive, TargetNotEmpty
from bot.backup.history import GitHistory
from bot.backup.restore import Restored, restore, verify
from bot.backup.schedule import BackupSchedule, period_of, prune
from bot.backup.take import Backup, take_backup

__all__ = [
    "MANIFEST",
    "Backup",
    "BackupError",
    "BackupFailed",
    "BackupSchedule",
    "BadArchive",
    "ConflictNotices",
    "GitHistory",
    "Manifest",
    "Restored",
    "TargetNotEmpty",
    "period_of",
    "prune",
    "restore",
    "take_backup",
    "verify",
]
