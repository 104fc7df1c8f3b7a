"""What an e-mail says, as plain data: its header (:mod:`bot.channels.email.headers`), its new text, what
it forwards, and its files.

Pure functions over the raw message, so every kind of mail is testable without a server. A mail is
someone's input: any part may be missing, repeated, malformed or enormous, and reading one never raises
for that (a part that cannot be decoded is read with replacement characters). The channel reads a mail
in a process of its own, within limits of time and memory (:mod:`bot.channels.email.bounded`), and only
the mail of a sender it serves. Within that, the work is bounded too: at most :data:`MAX_PARTS` parts
are parsed, messages forwarded inside forwarded ones are read :data:`MAX_DEPTH` deep, and each limit
says what it left out.
"""

from __future__ import annotations

import email
import mimetypes
import re
from dataclasses import dataclass, field
from email import policy
from email.message import Message

from bot.channels.email.body import Body, new_text
from bot.channels.email.headers import MAX_SUBJECT, Headers, decoded, one_line, read_headers

# Files beyond this many in one mail are left out (and said to be).
MAX_ATTACHMENTS = 20
# Parts of a mail parsed at most: the rest of the mail is left out (and said to be).
MAX_PARTS = 500
# Forwarded messages inside forwarded messages are read this deep.
MAX_DEPTH = 5
TEXT_TYPES = ("text/plain", "text/html")
_PART_START = re.compile(rb"^--\S", re.MULTILINE)
# The header fields of a part read to handle it: any others, however long, are never looked at.


@dataclass(frozen=True)
class File:
    """A file that came with the mail (an attachment, or an inline image)."""

    name: str
    content_type: str
    data: bytes


@dataclass(frozen=True)
class Forwarded:
    """A message of someone else's inside this one (an attached ``message/rfc822``, or a forward in the
    body): untrusted content, never the sender's own words."""

    sender: str
    subject: str
    date: str
    text: str


@dataclass(frozen=True)
class Mail:
    """One e-mail, reduced to what vaultbot uses."""

    headers: Headers
    text: str  # the new text: quoted history, signatures and forwards cut off
    forwarded: list[Forwarded] = field(default_factory=list)
    files: list[File] = field(default_factory=list)
    files_left_out: int = 0
    left_out: list[str] = field(default_factory=list)  # what the limits left out, in words for the model


def read_mail(raw: bytes) -> Mail:
    """The mail in ``raw`` (RFC 5322 bytes, as IMAP gives them)."""
    headers = read_headers(raw)
    left_out: list[str] = []
    raw = _first_parts(raw, left_out)
    # compat32: header fields stay the strings they came as (the default policy parses each one it is
    # asked for, in time that grows much faster than the field).
    message = email.message_from_bytes(raw, policy=policy.compat32)
    part = _body_part(message)
    html = part is not None and part.get_content_type() == "text/html"
    body = new_text(_decoded(part) if part is not None else "", html=html, forwarding=_forwarding(headers.subject))
    files, forwarded, files_left_out = _parts(message, part, left_out)
    return Mail(
        headers=headers,
        text=body.text,
        forwarded=[*(_inline_forward(body)), *forwarded],
        files=files,
        files_left_out=files_left_out,
        left_out=left_out,
    )


def _first_parts(raw: bytes, left_out: list[str]) -> bytes:
    """``raw`` up to its MAX_PARTS-th part (a part starts at a ``--boundary`` line)."""
    for count, match in enumerate(_PART_START.finditer(raw), start=1):
        if count > MAX_PARTS:
            left_out.append(f"the mail has more than {MAX_PARTS} parts; the rest of it was not read")
            return raw[: match.start()]
    return raw


def _header(message: Message, name: str) -> str:
    """The first ``name`` field as text ("" when absent), decoded and cut to a bound."""
    value = message.get(name)
    return decoded(str(value)[:1000]) if value is not None else ""


def _forwarding(subject: str) -> bool:
    """Whether the subject says the mail forwards another (``Fwd:``, ``WG:``, ``TR:``, ``Пересл:``…); a
    reply to a forward (``Re: Fwd:``) quotes the conversation instead."""
    return FORWARD_SUBJECT.match(subject) is not None


FORWARD_SUBJECT = re.compile(
    r"\s*(fwd?|wg|tr|rv|reenv|enc|doorst|vs|i|pd|przekaz|пересл|ilt|İlt|ilet|전달|転送|转发|轉寄)\s*[:：]",
    re.IGNORECASE,
)


def _decoded(part: Message) -> str:
    """A text part's content as text, whatever its declared charset."""
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        return ""
    charset = part.get_content_charset() or "utf-8"
    try:
        return payload.decode(charset, errors="replace")
    except LookupError:  # a charset Python does not know
        return payload.decode("utf-8", errors="replace")


def _body_part(message: Message) -> Message | None:
    """The mail's text: its plain part, else its HTML one, looking into ``multipart/*`` (not into
    attached messages, and not at parts that are attachments)."""
    found: dict[str, Message] = {}
    stack = [message]
    while stack:
        part = stack.pop(0)
        kind = part.get_content_type()
        if part.is_multipart() and kind != "message/rfc822":
            stack.extend(_children(part))
        elif kind in TEXT_TYPES and not _attached(part):
            found.setdefault(kind, part)
    return found.get("text/plain") or found.get("text/html")


def _attached(part: Message) -> bool:
    disposition = str(part.get("Content-Disposition", ""))[:200].split(";", 1)[0].strip().lower()
    return disposition == "attachment"


def _inline_forward(body: Body) -> list[Forwarded]:
    return [Forwarded(sender=f.sender, subject=f.subject, date=f.date, text=f.text) for f in body.forwarded]


def _parts(message: Message, body: Message | None, left_out: list[str]) -> tuple[list[File], list[Forwarded], int]:
    """The files of the mail and the messages it forwards as attachments (with their own files), those
    forwarded inside forwarded ones up to MAX_DEPTH deep; ``body`` is the mail's body part, no file."""
    files: list[File] = []
    forwarded: list[Forwarded] = []
    files_left_out = deeper = 0
    stack: list[tuple[Message, int]] = [(message, 0)]
    while stack:
        part, depth = stack.pop(0)
        if part.get_content_type() == "message/rfc822":
            inner = part.get_payload()
            inner = inner[0] if isinstance(inner, list) and inner else inner
            if not isinstance(inner, Message):
                continue
            if depth >= MAX_DEPTH:
                deeper += 1
                continue
            forwarded.append(_forwarded(inner))
            # A forwarded message that is itself only a forwarded message is the next level down.
            nested = [inner] if inner.get_content_type() == "message/rfc822" else _children(inner)
            stack.extend((child, depth + 1) for child in nested)
            continue
        if part.is_multipart():
            stack.extend((child, depth) for child in _children(part))
            continue
        if part is body or (part.get_content_type() in TEXT_TYPES and _file_name(part) is None):
            continue  # the body, or an alternative of it
        data = part.get_payload(decode=True)
        if not isinstance(data, bytes) or not data:
            continue
        if len(files) >= MAX_ATTACHMENTS:
            files_left_out += 1
            continue
        files.append(File(_file_name(part) or _unnamed(part, len(files) + 1), part.get_content_type(), data))
    if deeper:
        left_out.append(f"{deeper} message(s) forwarded more than {MAX_DEPTH} levels deep were not read")
    return files, forwarded, files_left_out


def _children(part: Message) -> list[Message]:
    if not part.is_multipart():
        return [part]
    payload = part.get_payload()
    return [p for p in payload if isinstance(p, Message)] if isinstance(payload, list) else []


def _forwarded(inner: Message) -> Forwarded:
    sender = _header(inner, "From")
    part = _body_part(inner)
    text = new_text(_decoded(part), html=part.get_content_type() == "text/html", cut=False).text if part else ""
    return Forwarded(
        sender=one_line(sender)[:200],
        subject=one_line(_header(inner, "Subject"))[:MAX_SUBJECT],
        date=one_line(_header(inner, "Date"))[:100],
        text=text,
    )


def _file_name(part: Message) -> str | None:
    """The file's own name, if it has one."""
    try:
        name = part.get_filename()
    except Exception:  # an undecodable RFC 2231 name
        name = None
    name = one_line(decoded(str(name)[:1000])) if name else ""
    return name or None


def _unnamed(part: Message, number: int) -> str:
    """``attachment N`` with the extension of the part's type."""
    extension = mimetypes.guess_extension(part.get_content_type()) or ".bin"
    return f"attachment {number}{extension}"
