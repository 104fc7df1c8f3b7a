"""A photo, file, voice note or video sent in a room: fetched from the homeserver's media repository
into the vault's ``Attachments/``, and described as the runner reads it (an image to show the model, a
document to read, a recording to transcribe)."""

from __future__ import annotations

import asyncio
import mimetypes
from dataclasses import dataclass
from typing import Any

from nio import AsyncClient, DownloadResponse, EncryptionError
from nio.crypto import decrypt_attachment

from bot.bus import Attachment, Audio, Document
from bot.channels.attachments import readable_document, save_attachment, saved_line
from bot.images import is_image_path
from vault import Vault

# Files larger than this are not fetched; the person is told (a homeserver's usual upload limit is 50 MB).
MAX_BYTES = 50 * 1024 * 1024
MSGTYPES = {"m.image": "photo", "m.file": "document", "m.audio": "audio", "m.video": "video"}


class NotFetched(Exception):
    """The file could not be fetched: the message says why, in words for the person."""


@dataclass(frozen=True)
class Saved:
    """A file kept in the vault and what the runner does with it."""

    path: str
    kind: str  # photo, document, voice, audio, video
    caption: str

    @property
    def line(self) -> str:
        """The line that tells the model where the file is kept."""
        what = {"photo": "Photo", "document": "File", "voice": "Voice note", "audio": "Audio file"}.get(
            self.kind, "Video"
        )
        return saved_line(what, self.path)

    @property
    def attachment(self) -> Attachment:
        """The file as the message's attachment, of its kind, which undoing its run takes back."""
        if self.images:
            kind = "image"
        elif self.kind == "document":
            kind = "document" if self.document is not None else "file"
        else:
            kind = self.kind
        return Attachment(path=self.path, kind=kind)  # type: ignore[arg-type]

    @property
    def images(self) -> list[str]:
        """The image to show the model, if the file is one."""
        return [self.path] if is_image_path(self.path) else []

    @property
    def document(self) -> Document | None:
        """The document whose text the model is given, if the file is one it can read."""
        readable = self.kind == "document" and readable_document(self.path)
        return Document(path=self.path) if readable else None

    @property
    def audio(self) -> Audio | None:
        """The recording to transcribe, if the file is one."""
        if self.kind not in ("voice", "audio"):
            return None
        return Audio(path=self.path, kind=self.kind)  # type: ignore[arg-type]


def is_file(content: dict[str, Any]) -> bool:
    """Whether a message's content is a file of a kind the channel keeps (in an encrypted room, the
    file is encrypted too, and its ``file`` holds its address and key)."""
    encrypted = content.get("file")
    url = encrypted.get("url") if isinstance(encrypted, dict) else content.get("url")
    return content.get("msgtype") in MSGTYPES and isinstance(url, str)


async def fetch(client: AsyncClient, notes: Vault, content: dict[str, Any], event_id: str) -> Saved:
    """Fetch the file of ``content`` into ``Attachments/`` (the same bytes again keep the same path)."""
    kind = MSGTYPES[content["msgtype"]]
    if kind == "audio" and "org.matrix.msc3245.voice" in content:
        kind = "voice"
    info = content.get("info") if isinstance(content.get("info"), dict) else {}
    size = info.get("size")
    if isinstance(size, int) and size > MAX_BYTES:
        raise NotFetched(f"That {_noun(kind)} is too big for me: I take files up to {MAX_BYTES // 1048576} MB.")
    encrypted = content.get("file") if isinstance(content.get("file"), dict) else None
    got = await client.download(mxc=(encrypted or content)["url"])
    if not isinstance(got, DownloadResponse) or not isinstance(got.body, bytes):
        raise NotFetched(f"I could not fetch that {_noun(kind)} from the homeserver ({got}).")
    if len(got.body) > MAX_BYTES:
        raise NotFetched(f"That {_noun(kind)} is too big for me: I take files up to {MAX_BYTES // 1048576} MB.")
    data = got.body if encrypted is None else await asyncio.to_thread(_decrypted, got.body, encrypted, kind)
    body = content.get("body") if isinstance(content.get("body"), str) else ""
    filename = content.get("filename") if isinstance(content.get("filename"), str) else None
    name = _named(filename or body or f"{kind} {event_id[1:9]}", info.get("mimetype"))
    caption = body if filename and body and body != filename else ""
    path = await save_attachment(notes, name, data)
    return Saved(path=path, kind=kind, caption=caption)


def _decrypted(ciphertext: bytes, file: dict[str, Any], kind: str) -> bytes:
    """An encrypted room's file, decrypted with the key its message carries (and checked by its hash)."""
    try:
        return bytes(decrypt_attachment(ciphertext, file["key"]["k"], file["hashes"]["sha256"], file["iv"]))
    except (EncryptionError, KeyError, TypeError, ValueError) as exc:
        raise NotFetched(f"I could not decrypt that {_noun(kind)} ({type(exc).__name__}).") from None


def _named(name: str, mimetype: object) -> str:
    """The file's name, with the extension of its type when it has none."""
    name = name.strip().replace("/", " ").replace("\\", " ") or "file"
    if "." not in name and isinstance(mimetype, str):
        name += mimetypes.guess_extension(mimetype) or ""
    return name


def _noun(kind: str) -> str:
    return {"photo": "photo", "voice": "voice note", "audio": "audio file", "video": "video"}.get(kind, "file")
