"""Exceptions raised by the vault; their messages are read by both a model and a person."""

from __future__ import annotations


class VaultError(Exception):
    """Base class for every failure the vault reports on purpose."""


class PathNotAllowed(VaultError):
    """A path or folder points outside the vault or into one of its private places."""


class NoteNotFound(VaultError):
    """No note or folder answers to the given path or title."""


class NoteExists(VaultError):
    """A note cannot be created because its name is taken too many times over."""


class NoteChanged(VaultError):
    """A note changed on disk since this vault last read or wrote it."""


class NotRead(VaultError):
    """A note would be replaced by a writer that has not read it, so its text would be lost unseen."""


class InvalidNote(VaultError):
    """The input cannot become a note: empty title, NUL bytes, unknown mode and the like."""
