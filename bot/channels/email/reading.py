"""What an e-mail says, as plain data: who sent it, its thread, the headers that mark automatic mail,
its new text, what it forwards, and its files.

Pure functions over the raw message, so every kind of mail is testable without a server. A mail is
someone's input: any header may be missing, repeated, malformed or enormous, and reading one never
raises for that (a part that cannot be decoded is read with replacement characters).
"""

from __future__ import annotations

import mimetypes
import re
from dataclasses import dataclass, field
from email import policy
from email.message import EmailMessage, Message
from email.parser import BytesParser

from bot.channels.email.body import Body, new_text

# Message-IDs are kept only in this shape (RFC 5322's msg-id without comments or folding), so one can
# go back out in In-Reply-To and References as it came.
MESSAGE_ID = re.compile(r"<[^<>\s\x00-\x1f\x7f]{1,250}>")
# A thread's References kept in a reply: the first (the thread's root) and the latest ones.
MAX_REFERENCES = 20
MAX_SUBJECT = 250
# Files beyond this many in one mail are left out (and said to be).
MAX_ATTACHMENTS = 20
TEXT_TYPES = ("text/plain", "text/html")


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

    message_id: str | None
    sender: str | None  # the one From address, lower-cased; None when there is none or more than one
    sender_name: str | None
    subject: str
    references: list[str]  # the thread up to and including this mail, for a reply's References
    text: str  # the new text: quoted history, signatures and forwards cut off
    forwarded: list[Forwarded] = field(default_factory=list)
    files: list[File] = field(default_factory=list)
    files_left_out: int = 0
    # The headers that mark automatic mail and that say who the sender is, as they came.
    auto_submitted: str = ""
    precedence: str = ""
    list_id: str = ""
    return_path: str = ""
    content_type: str = ""
    extra_auto: str = ""  # X-Autoreply, X-Autorespond, X-Auto-Response-Suppress-style markers
    authentication_results: list[str] = field(default_factory=list)  # top to bottom, as the mail has them

    @property
    def domain(self) -> str | None:
        """The domain of the From address."""
        return self.sender.rsplit("@", 1)[1] if self.sender else None


def read_mail(raw: bytes) -> Mail:
    """The mail in ``raw`` (RFC 5322 bytes, as IMAP gives them)."""
    message = BytesParser(policy=policy.default).parsebytes(raw)
    assert isinstance(message, EmailMessage)
    sender, name = _sender(message)
    message_id = _message_id(_header(message, "Message-ID"))
    references = _ids(_header(message, "References")) or _ids(_header(message, "In-Reply-To"))
    if message_id is not None:
        references = [*references, message_id]
    if len(references) > MAX_REFERENCES:
        references = [references[0], *references[-(MAX_REFERENCES - 1) :]]
    subject = _one_line(_header(message, "Subject"))[:MAX_SUBJECT]
    part = _body_part(message)
    html = part is not None and part.get_content_type() == "text/html"
    body = new_text(_decoded(part) if part is not None else "", html=html, forwarding=_forwarding(subject))
    files, forwarded, left_out = _parts(message, part)
    return Mail(
        message_id=message_id,
        sender=sender,
        sender_name=name,
        subject=subject,
        references=references,
        text=body.text,
        forwarded=[*(_inline_forward(body)), *forwarded],
        files=files,
        files_left_out=left_out,
        auto_submitted=_header(message, "Auto-Submitted"),
        precedence=_header(message, "Precedence"),
        list_id=_header(message, "List-Id"),
        return_path=_header(message, "Return-Path"),
        content_type=message.get_content_type(),
        extra_auto=" ".join(
            filter(None, (_header(message, name) for name in ("X-Autoreply", "X-Autorespond", "X-Auto-Reply")))
        ),
        authentication_results=[_unfold(str(value)) for value in message.get_all("Authentication-Results") or []],
    )


def _header(message: Message, name: str) -> str:
    """The first ``name`` header as text ("" when absent or unreadable)."""
    try:
        value = message.get(name)
    except Exception:  # a header the parser kept but cannot present (a defect): treated as absent
        return ""
    return _unfold(str(value)) if value is not None else ""


def _unfold(value: str) -> str:
    return re.sub(r"\s*[\r\n]+\s*", " ", value).strip()


def _one_line(value: str) -> str:
    return re.sub(r"[\x00-\x1f\x7f]+", " ", value).strip()


def _sender(message: Message) -> tuple[str | None, str | None]:
    """The From address, lower-cased, and its display name; None unless From names exactly one address,
    in a header without defects (``ann@example.com <mallory@evil.example>`` reads as either)."""
    values = message.get_all("From") or []
    if len(values) != 1:
        return None, None
    header = values[0]
    try:
        addresses = list(header.addresses)
        defects = list(header.defects)
    except Exception:  # a header the parser could not make an address list of
        return None, None
    if len(addresses) != 1 or defects:
        return None, None
    address = addresses[0].addr_spec.strip().lower()
    if address.count("@") != 1 or re.search(r"[\s<>,;\"\x00-\x1f\x7f]", address):
        return None, None
    return address, (_one_line(addresses[0].display_name)[:100] or None)


def _message_id(value: str) -> str | None:
    match = MESSAGE_ID.search(value)
    return match.group(0) if match else None


def _ids(value: str) -> list[str]:
    return MESSAGE_ID.findall(value)


def _forwarding(subject: str) -> bool:
    """Whether the subject says the mail forwards another (``Fwd:``, ``Fw:``, ``WG:``, ``TR:``…); a reply
    to a forward (``Re: Fwd:``) quotes the conversation instead."""
    return re.match(r"\s*(fwd?|wg|tr|rv|doorst|vs|i)\s*:", subject, re.IGNORECASE) is not None


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


def _body_part(message: EmailMessage) -> Message | None:
    try:
        return message.get_body(preferencelist=("plain", "html"))
    except Exception:  # a structure the library cannot walk: no body
        return None


def _inline_forward(body: Body) -> list[Forwarded]:
    return [Forwarded(sender=f.sender, subject=f.subject, date=f.date, text=f.text) for f in body.forwarded]


def _parts(message: EmailMessage, body: Message | None) -> tuple[list[File], list[Forwarded], int]:
    """The files of the mail and the messages it forwards as attachments (with their own files);
    ``body`` is the mail's body part, which is no file."""
    files: list[File] = []
    forwarded: list[Forwarded] = []
    left_out = 0
    stack: list[Message] = [message]
    while stack:
        part = stack.pop(0)
        if part.get_content_type() == "message/rfc822":
            inner = part.get_payload()
            inner = inner[0] if isinstance(inner, list) and inner else inner
            if isinstance(inner, EmailMessage):
                forwarded.append(_forwarded(inner))
                stack.extend(_children(inner))
            continue
        if part.is_multipart():
            stack.extend(_children(part))
            continue
        if part is body or (part.get_content_type() in TEXT_TYPES and part.get_filename() is None):
            continue  # the body, or an alternative of it
        data = part.get_payload(decode=True)
        if not isinstance(data, bytes) or not data:
            continue
        if len(files) >= MAX_ATTACHMENTS:
            left_out += 1
            continue
        files.append(File(_file_name(part, len(files) + 1), part.get_content_type(), data))
    return files, forwarded, left_out


def _children(part: Message) -> list[Message]:
    if not part.is_multipart():
        return [part]
    payload = part.get_payload()
    return [p for p in payload if isinstance(p, Message)] if isinstance(payload, list) else []


def _forwarded(inner: EmailMessage) -> Forwarded:
    sender = _header(inner, "From")
    part = _body_part(inner)
    text = new_text(_decoded(part), html=part.get_content_type() == "text/html", cut=False).text if part else ""
    return Forwarded(
        sender=_one_line(sender)[:200],
        subject=_one_line(_header(inner, "Subject"))[:MAX_SUBJECT],
        date=_one_line(_header(inner, "Date"))[:100],
        text=text,
    )


def _file_name(part: Message, number: int) -> str:
    """The file's own name, else ``attachment N`` with the extension of its type."""
    try:
        name = part.get_filename()
    except Exception:  # an undecodable RFC 2231 name
        name = None
    if name and _one_line(name):
        return _one_line(name)
    extension = mimetypes.guess_extension(part.get_content_type()) or ".bin"
    return f"attachment {number}{extension}"
