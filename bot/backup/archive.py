"""The archive: a ``.tar.gz`` of plain files whose last member, ``manifest.json``, lists every other
member with its SHA-256 and size.

Written under a ``.partial`` name and renamed into place once whole, so an archive under its own name
is complete; read as a stream, so a truncated or corrupt one is refused at the first bad byte, and
one whose manifest is missing (cut short) or disagrees with a member is refused too.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import tarfile
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from bot.backup.errors import BackupFailed, BadArchive

__all__ = ["FORMAT", "MANIFEST", "ArchiveWriter", "Manifest", "read_archive"]

MANIFEST = "manifest.json"
FORMAT = 1
# The tops of the archive: what a restore knows where to put.
ROOTS = frozenset({"store", "vault", "config", "secrets"})
_CHUNK = 1 << 20


@dataclass
class Manifest:
    """What an archive holds: each member's hash and size, and what the backup says of itself."""

    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    about: dict[str, Any] = field(default_factory=dict)

    @property
    def size(self) -> int:
        """The bytes of all members, before compression."""
        return sum(entry["size"] for entry in self.files.values())


class ArchiveWriter:
    """Adds members to ``path`` (written as ``path.partial``); :meth:`finish` adds the manifest and
    names the archive. Blocking: use it in a thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._partial = path.with_name(path.name + ".partial")
        self.manifest = Manifest()
        try:
            self._tar = tarfile.open(self._partial, "w:gz", compresslevel=6)
        except OSError as exc:
            raise BackupFailed(f"cannot write {path}: {exc.strerror or exc}") from None

    def add_bytes(self, name: str, data: bytes, mtime: float) -> None:
        """Add ``data`` as member ``name``: a live file read once, so its hash is of what is stored."""
        self._check(name)
        self.manifest.files[name] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)}
        self._add(name, len(data), mtime, io.BytesIO(data))

    def add_file(self, name: str, path: Path) -> None:
        """Add the file at ``path``, which nothing else changes (a snapshot of a database)."""
        self._check(name)
        digest = hashlib.sha256()
        with open(path, "rb") as file:
            while chunk := file.read(_CHUNK):
                digest.update(chunk)
            size = file.tell()
            file.seek(0)
            self.manifest.files[name] = {"sha256": digest.hexdigest(), "size": size}
            self._add(name, size, os.stat(path).st_mtime, file)

    def finish(self, about: dict[str, Any]) -> int:
        """Write the manifest last, close, and give the archive its name; returns its size in bytes."""
        self.manifest.about = {"format": FORMAT, **about}
        data = json.dumps({"about": self.manifest.about, "files": self.manifest.files}, indent=1).encode()
        self._add(MANIFEST, len(data), time.time(), io.BytesIO(data))
        try:
            self._tar.close()
            with open(self._partial, "rb") as file:
                os.fsync(file.fileno())
            os.replace(self._partial, self.path)
        except OSError as exc:
            self.abandon()
            raise BackupFailed(f"cannot write {self.path}: {exc.strerror or exc}") from None
        return self.path.stat().st_size

    def abandon(self) -> None:
        """Close and remove the partial archive (a backup that failed half way)."""
        try:
            self._tar.close()
        except (OSError, tarfile.TarError):
            pass
        self._partial.unlink(missing_ok=True)

    def _add(self, name: str, size: int, mtime: float, data: Any) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode = size, int(mtime), 0o600
        try:
            self._tar.addfile(info, data)
        except OSError as exc:
            self.abandon()
            raise BackupFailed(f"cannot write {self.path}: {exc.strerror or exc}") from None

    def _check(self, name: str) -> None:
        if name in self.manifest.files or not _safe_name(name):
            raise ValueError(f"not a member name an archive can hold twice or at all: {name!r}")


def read_archive(path: Path, each: Callable[[str, bytes], None] | None = None) -> Manifest:
    """Read the whole archive at ``path``, checking every member against the manifest; ``each`` is
    given every member but the manifest as it is read (before the manifest is: a restore checks the
    whole archive first, then reads it again to write it, comparing each member itself). Raises :class:`BadArchive` with
    one line saying what is wrong. Blocking: use it in a thread."""
    hashes: dict[str, str] = {}
    manifest: Manifest | None = None
    try:
        with tarfile.open(path, "r|gz") as tar:
            for member in tar:
                if manifest is not None:
                    raise BadArchive(f"{path} is not a vaultbot backup: something follows its manifest.")
                data = _member(path, tar, member)
                if member.name == MANIFEST:
                    manifest = _manifest(path, data)
                    continue
                hashes[member.name] = hashlib.sha256(data).hexdigest()
                if each is not None:
                    each(member.name, data)
    except FileNotFoundError:
        raise BadArchive(f"{path} does not exist.") from None
    except IsADirectoryError:
        raise BadArchive(f"{path} is a folder, not a backup archive.") from None
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise BadArchive(f"{path} is truncated or corrupt ({exc}): it cannot be trusted.") from None
    except OSError as exc:
        raise BadArchive(f"cannot read {path}: {exc.strerror or exc}") from None
    if manifest is None:
        raise BadArchive(f"{path} has no manifest: it is cut short or not a vaultbot backup.")
    _compare(path, manifest, hashes)
    return manifest


def _member(path: Path, tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    if not member.isfile() or (member.name != MANIFEST and not _safe_name(member.name)):
        raise BadArchive(f"{path} is not a vaultbot backup: it holds {member.name!r}, which is not a plain file.")
    source = tar.extractfile(member)
    assert source is not None
    return source.read()


def _manifest(path: Path, data: bytes) -> Manifest:
    try:
        parsed = json.loads(data)
        files = parsed["files"]
        if parsed["about"].get("format") != FORMAT or not all(_safe_name(name) for name in files):
            raise ValueError
        return Manifest(files=files, about=parsed["about"])
    except (ValueError, KeyError, TypeError, AttributeError):
        raise BadArchive(f"{path} has a manifest vaultbot cannot read.") from None


def _compare(path: Path, manifest: Manifest, hashes: dict[str, str]) -> None:
    missing = sorted(set(manifest.files) - set(hashes))
    if missing:
        raise BadArchive(f"{path} is missing {len(missing)} file(s) its manifest lists, {missing[0]} first.")
    extra = sorted(set(hashes) - set(manifest.files))
    if extra:
        raise BadArchive(f"{path} holds {extra[0]}, which its manifest does not list.")
    for name, digest in hashes.items():
        if manifest.files[name]["sha256"] != digest:
            raise BadArchive(f"{path}: the hash of {name} does not match its manifest; the archive is corrupt.")


def _safe_name(name: str) -> bool:
    """A relative POSIX path under one of :data:`ROOTS`, without ``..``, empty parts or a NUL."""
    parts = PurePosixPath(name).parts
    return (
        "\x00" not in name
        and "\\" not in name
        and len(parts) >= 2
        and parts[0] in ROOTS
        and not name.startswith("/")
        and all(part not in ("", ".", "..") for part in parts)
        and PurePosixPath(*parts).as_posix() == name
    )
