"""A folder of Obsidian-compatible Markdown notes, kept safe from paths that try to leave it."""

from vault.changes import Change
from vault.conflicts import Conflict, find_conflicts, is_conflict_copy
from vault.document_reader import ReadingLimits
from vault.documents import DocumentText, is_document, page_marker
from vault.embedder import Embedder, EnglishEmbedder, MultilingualEmbedder
from vault.errors import InvalidNote, NoteChanged, NoteExists, NoteNotFound, NotRead, PathNotAllowed, VaultError
from vault.notes import Listing, Note, NoteSummary, Related, SearchHit, SyncReport, WriteResult
from vault.takeback import TRASH, Outcome
from vault.vault import ATTACHMENTS, PRIVATE_DIR, Vault, daily_entry

__all__ = [
    "ATTACHMENTS",
    "PRIVATE_DIR",
    "TRASH",
    "Change",
    "Conflict",
    "Outcome",
    "DocumentText",
    "Embedder",
    "EnglishEmbedder",
    "InvalidNote",
    "Listing",
    "Note",
    "NoteChanged",
    "NoteExists",
    "NoteNotFound",
    "NotRead",
    "MultilingualEmbedder",
    "NoteSummary",
    "PathNotAllowed",
    "ReadingLimits",
    "Related",
    "SearchHit",
    "SyncReport",
    "Vault",
    "VaultError",
    "WriteResult",
    "daily_entry",
    "find_conflicts",
    "is_conflict_copy",
    "is_document",
    "page_marker",
]
