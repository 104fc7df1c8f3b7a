"""What can go wrong with a backup or a restore, as one line a person can act on.

- :class:`BadArchive`: the archive cannot be trusted (not an archive, truncated, a hash that does
  not match, a file the manifest does not list): nothing is restored from it.
- :class:`TargetNotEmpty`: a restore would mix the archive with what is already there.
- :class:`BackupFailed`: a backup could not be written (a full disk, a folder it cannot write).
"""

from __future__ import annotations

__all__ = ["BackupError", "BackupFailed", "BadArchive", "TargetNotEmpty"]


class BackupError(Exception):
    """A backup or restore refused or failed; the message is one line naming why."""


class BadArchive(BackupError):
    """The archive is not a whole vaultbot backup."""


class TargetNotEmpty(BackupError):
    """The data folder or the vault a restore would fill already holds something."""


class BackupFailed(BackupError):
    """Writing the backup failed; no archive was left under its name."""
