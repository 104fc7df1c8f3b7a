"""Keeping user-supplied paths inside the vault, and turning titles and folders into safe names."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from vault.errors import PathNotAllowed

NOTE_SUFFIX = ".md"
MAX_COMPONENT_BYTES = 255
# A create may add " 2" … " 999" to a taken name, so the stem leaves room for it and ".md".
_MAX_STEM_BYTES = MAX_COMPONENT_BYTES - len(NOTE_SUFFIX.encode()) - len(b" 999")

_DRIVE = re.compile(r"^[A-Za-z]:")
# Forbidden on Windows, macOS or Linux, plus the characters that break Obsidian links.
_SEPARATORS = re.compile(r"[/\\]")
_FORBIDDEN = re.compile(r'[<>:"|?*#^\[\]\x00-\x1f\x7f-\x9f]')
# Invisible direction controls (U+202E shows "fdp.exe" as "exe.pdf") and the byte-order mark: dropped,
# so a file name reads as what it is.
_INVISIBLE = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
# Device names Windows reserves whatever the extension ("nul.txt" too), superscript digits included.
_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"{port}{n}" for port in ("COM", "LPT") for n in "0123456789¹²³")}


def show(text: str, limit: int = 60) -> str:
    """Quote user input for an error message: control characters escaped, long input cut."""
    shown = text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
    if len(shown) > limit:
        shown = shown[: limit - 1] + "…"
    return f"'{shown}'"


def split_components(path: str) -> list[str]:
    """Split a vault-relative path into checked components; ``[]`` means the vault root.

    Raises ``PathNotAllowed`` for anything that could reach outside the vault or into a
    hidden folder, before the file system is touched.
    """
    if "\x00" in path:
        raise PathNotAllowed(f"{show(path)} contains a NUL byte, which no path may hold.")
    # Backslashes are separators too, so "..\\x" cannot slip past the ".." check.
    normalised = path.strip().replace("\\", "/")
    if normalised.startswith("/"):
        raise PathNotAllowed(f"{show(path)} is an absolute path; give a path relative to the vault.")
    if _DRIVE.match(normalised):
        raise PathNotAllowed(f"{show(path)} names a drive; give a path relative to the vault.")
    parts: list[str] = []
    for raw in normalised.split("/"):
        part = raw.strip()
        if part in ("", "."):
            continue
        if part == "..":
            raise PathNotAllowed(f"{show(path)} leaves the vault.")
        if part.startswith("."):
            raise PathNotAllowed(f"{show(path)} goes into the hidden {show(part)}, which the vault keeps private.")
        if len(part.encode("utf-8")) > MAX_COMPONENT_BYTES:
            raise PathNotAllowed(f"{show(path)} has a name longer than {MAX_COMPONENT_BYTES} bytes.")
        parts.append(part)
    return parts


def is_inside(root: Path, candidate: Path) -> bool:
    """Whether ``candidate`` (already resolved) is ``root`` or below it, outside hidden folders."""
    if not candidate.is_relative_to(root):
        return False
    return not any(part.startswith(".") for part in candidate.relative_to(root).parts)


def confine(root: Path, path: str) -> Path:
    """The absolute, symlink-resolved location of vault-relative ``path`` under resolved ``root``.

    Raises ``PathNotAllowed`` if the input is malformed or if, once symlinks are followed,
    it lands outside the vault or in a hidden folder.
    """
    return resolve_inside(root, root.joinpath(*split_components(path)), show(path))


def follow_links(location: Path) -> Path:
    """``location`` with every symlink that exists followed; what does not exist yet is kept as written.

    Raises ``OSError`` (``ELOOP``) when a symlink on the way loops, on every Python: 3.11's non-strict
    ``Path.resolve`` raised ``RuntimeError`` then, while 3.13's stops at the loop and returns the rest
    unresolved, so the loop is looked for here as 3.11 did, by asking the system for the resolved path.
    """
    try:
        # Non-strict resolve follows every symlink that exists, so a link pointing out is caught
        # even when the rest of the path is still to be created.
        resolved = location.resolve()
    except RuntimeError as exc:
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(location)) from exc
    try:
        resolved.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise
    return resolved


def resolve_inside(root: Path, location: Path, shown: str) -> Path:
    """``location`` with its symlinks followed, provided that stays in ``root`` and out of hidden folders.

    Raises ``PathNotAllowed`` saying why otherwise; ``shown`` is how the error names the user's path.
    """
    try:
        resolved = follow_links(location)
    except OSError as exc:
        raise PathNotAllowed(f"{shown} cannot be followed: a symlink on the way loops or cannot be read.") from exc
    if not is_inside(root, resolved):
        where = "into a hidden folder" if resolved.is_relative_to(root) else "outside the vault"
        raise PathNotAllowed(f"{shown} leads {where} through a link.")
    return resolved


def note_stem(title: str) -> str:
    """A file name (without ``.md``) for ``title`` that every OS and Obsidian accept."""
    return portable_name(title, _MAX_STEM_BYTES)


def folder_name(segment: str) -> str:
    """The name a new folder called ``segment`` gets: valid on Linux, macOS and Windows and in
    Obsidian links, by the same rules as a note's file name."""
    return portable_name(segment, MAX_COMPONENT_BYTES)


def portable_name(text: str, max_bytes: int) -> str:
    """``text`` as one path component of at most ``max_bytes`` UTF-8 bytes that Windows, macOS,
    Linux and Obsidian all accept: no separators, no ``<>:"|?*#^[]``, control or text-direction characters,
    no reserved device name (CON, NUL, COM1…), no leading dot or dash, no trailing dot or space. A cut falls
    between characters, never inside one."""
    name = _SEPARATORS.sub("-", _INVISIBLE.sub("", text))
    name = _FORBIDDEN.sub(" ", name)
    name = " ".join(name.split())
    # A leading dot would hide the entry, and a leading dash reads as an option to every command
    # (`rm -note.md`); trailing dots and spaces are dropped by Windows.
    name = name.lstrip(" .-").rstrip(" .")
    base, dot, rest = name.partition(".")
    if base.strip().upper() in _RESERVED:
        name = f"{base.strip()}_{dot}{rest}"
    encoded = name.encode("utf-8")
    if len(encoded) > max_bytes:
        name = encoded[:max_bytes].decode("utf-8", errors="ignore").rstrip(" .")
    return name or "Untitled"
