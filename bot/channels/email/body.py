"""A mail's new text: HTML made text, then quoted history, signatures and forwards cut off.

The reply parser (mail-parser-reply) splits a body at the headers mail clients put above quoted or
forwarded mail ("On … wrote:", "From: … Sent: …", "-----Original Message-----", in many languages) and
finds signatures ("-- ", "Sent from my iPhone", "Best regards"). The first part is what the person
wrote now. What follows is quoted history, which is cut (the conversation's history already holds it),
unless the mail forwards it: then each part is someone else's message, kept apart as untrusted content.

Time is bounded: the parser's expressions run on at most :data:`MAX_CHARS` characters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import html2text
from mailparser_reply.constants import MAIL_LANGUAGES, OUTLOOK_MAIL_SEPARATOR
from mailparser_reply.parser import EmailMessage

# About 25,000 tokens: a long letter or a pasted article. A longer body is cut here, and says so.
MAX_CHARS = 100_000
# HTML beyond this is not converted (a newsletter's markup, not a person's words).
MAX_HTML_CHARS = 1_000_000
LANGUAGES = list(MAIL_LANGUAGES)
# The line a mail client writes above a forwarded message, left at the end of the new text.
FORWARD_MARKER = re.compile(
    r"(?:^-+ ?(?:forwarded message|original message|weitergeleitete nachricht|message transféré)"
    r".*$|^begin forwarded message:?$|^anfang der weitergeleiteten nachricht:?$)\s*\Z",
    re.IGNORECASE | re.MULTILINE,
)


class _Body(EmailMessage):
    """mail-parser-reply's message, its text made ready the same way except for one call: 1.36 passes
    ``re.MULTILINE`` where ``re.sub`` takes its count (Python 3.13 warns, and only the first 8 Outlook
    separators were handled)."""

    def _normalize_text(self) -> None:
        text = "\n".join(line.strip() for line in self.text.replace("\r\n", "\n").split("\n"))
        self.text = re.sub(f"([^\n]){OUTLOOK_MAIL_SEPARATOR}", "\\1\n", text)


@dataclass(frozen=True)
class InlineForward:
    """A message forwarded in the body, below the forward's header lines."""

    sender: str
    subject: str
    date: str
    text: str


@dataclass(frozen=True)
class Body:
    """The new text of a body, and what it forwards."""

    text: str
    forwarded: list[InlineForward] = field(default_factory=list)


def new_text(text: str, *, html: bool = False, forwarding: bool = False, cut: bool = True) -> Body:
    """The new text of a body (``html``: an HTML one). With ``cut``, quoted history and signatures are
    cut off, and with ``forwarding`` (the subject says ``Fwd:``), or a forward's header line ending the
    new text, what follows is returned as forwarded messages."""
    if html:
        text = as_text(text)
    text, left_out = _bounded(text.replace("\r\n", "\n").replace("\r", "\n"))
    if not cut:
        return Body(_with_note(text.strip(), left_out))
    replies = _Body(text=text, languages=list(LANGUAGES), keep_hyphen_lists=True).read().replies
    if not replies:
        return Body(_with_note("", left_out))
    first = replies[0].body
    marked = FORWARD_MARKER.search(first) is not None
    first = FORWARD_MARKER.sub("", first).rstrip()
    # Lines quoted with ">" between the person's own (an answer written inline) are history too.
    first = "\n".join(line for line in first.split("\n") if not line.startswith(">")).strip()
    forwarded = [_forward(reply.headers, reply.full_body) for reply in replies[1:]] if forwarding or marked else []
    return Body(_with_note(first, left_out), forwarded)


def as_text(html: str) -> str:
    """HTML as Markdown-like text: links, lists and emphasis kept, images, scripts and styles left out."""
    converter = html2text.HTML2Text()
    converter.body_width = 0  # no wrapping: a person's lines stay theirs
    converter.ignore_images = True
    return converter.handle(html[:MAX_HTML_CHARS])


def _bounded(text: str) -> tuple[str, int]:
    if len(text) <= MAX_CHARS:
        return text, 0
    return text[:MAX_CHARS], len(text) - MAX_CHARS


def _with_note(text: str, left_out: int) -> str:
    if not left_out:
        return text
    return f"{text}\n\n[vaultbot: the mail was longer; {left_out:,} more characters were left out.]"


def _forward(headers: str, body: str) -> InlineForward:
    """A forwarded part, its From, Subject and Date read from the header lines above it."""
    fields: dict[str, str] = {}
    for line in headers.split("\n"):
        name, _, value = line.partition(":")
        key = name.strip().lower()
        if key in ("from", "von", "de", "subject", "betreff", "objet", "date", "datum", "sent", "gesendet"):
            fields.setdefault(key, value.strip())

    def first(*keys: str) -> str:
        return next((fields[k] for k in keys if fields.get(k)), "")

    text = body.strip()
    return InlineForward(
        sender=first("from", "von", "de")[:200],
        subject=first("subject", "betreff", "objet")[:250],
        date=first("date", "datum", "sent", "gesendet")[:100],
        text=text,
    )
