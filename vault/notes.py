"""The plain, JSON-friendly records the vault hands back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vault.changes import Change


@dataclass
class WriteResult:
    """What a write did: where the note is and whether anything changed; ``change`` records what
    changed (None when nothing did), for the record of the run, not for the model."""

    path: str
    created: bool
    unchanged: bool
    renamed: bool
    previous_version: str | None
    change: Change | None = None


@dataclass
class Note:
    """One note: its body without front matter, and the front matter as a dict."""

    path: str
    title: str
    content: str
    frontmatter: dict[str, Any]


@dataclass
class NoteSummary:
    """A note as shown in a listing; ``updated`` is ISO 8601 UTC."""

    path: str
    title: str
    tags: list[str]
    updated: str


@dataclass
class Listing:
    """A folder's notes (newest first) and its direct, visible subfolders."""

    notes: list[NoteSummary]
    folders: list[str]


@dataclass
class SearchHit:
    """A search match with a short piece of the body around the first hit."""

    path: str
    title: str
    snippet: str


@dataclass
class Related:
    """A note close in meaning to another one."""

    path: str
    title: str


@dataclass(frozen=True)
class SyncReport:
    """What a sync of the search index with the disk did."""

    indexed: int
    removed: int
    seconds: float
