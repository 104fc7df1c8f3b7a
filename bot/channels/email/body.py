"""A mail's new text: HTML made text, then quoted history, signatures and forwards cut off.

A body is split at the lines mail clients put above quoted or forwarded mail (:mod:`bot.channels.email.quotes`:
"On … wrote:", "From: … Sent: …", "-----Original Message-----", "Begin forwarded message:", in the
languages and clients of :data:`~bot.channels.email.quotes.LANGUAGES`). The first part is what the person
wrote now. What follows is quoted history, which is cut (the conversation's history already holds it),
unless the mail forwards it: then each part is someone else's message, kept apart as untrusted content.

Time is linear in the body's length: each line is looked at once, with a window of a few lines after it,
and the text kept is at most :data:`MAX_CHARS` characters (a longer one says so).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from bot.channels.email.html_text import html_text
from bot.channels.email.quotes import Split, split

# About 25,000 tokens: a long letter or a pasted article. A longer body is cut here, and says so.
MAX_CHARS = 100_000
# HTML beyond this is not converted (a newsletter's markup, not a person's words), and says so.
MAX_HTML_CHARS = 1_000_000


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
    cut off, and with ``forwarding`` (the subject says ``Fwd:``), or a forward's separator line, what
    follows is returned as forwarded messages."""
    left_out = 0
    if html:
        left_out = max(len(text) - MAX_HTML_CHARS, 0)
        text = html_text(text[:MAX_HTML_CHARS])
    text, cut_chars = _bounded(text.replace("\r\n", "\n").replace("\r", "\n"))
    left_out += cut_chars
    if not cut:
        return Body(_with_note(text.strip(), left_out))
    parts: Split = split(text)
    # Lines quoted with ">" between the person's own (an answer written inline) are history too.
    first = "\n".join(line for line in parts.new.split("\n") if not line.lstrip().startswith(">")).strip()
    forwarded = []
    if forwarding or parts.forwards:
        forwarded = [InlineForward(q.sender, q.subject, q.date, q.text) for q in parts.quoted]
    return Body(_with_note(first, left_out), forwarded)


def _bounded(text: str) -> tuple[str, int]:
    if len(text) <= MAX_CHARS:
        return text, 0
    return text[:MAX_CHARS], len(text) - MAX_CHARS


def _with_note(text: str, left_out: int) -> str:
    if not left_out:
        return text
    return f"{text}\n\n[vaultbot: the mail was longer; {left_out:,} more characters were left out.]"
