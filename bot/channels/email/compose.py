"""A reply as a mail: threaded (``In-Reply-To``, ``References``, ``Re:``), marked as automatic
(``Auto-Submitted: auto-replied``, so other robots do not answer it), one mail however long.

The model writes Markdown, which reads well as plain text, so the plain part is the text as written;
an HTML part renders it (headings, lists, emphasis, tables, links) for clients that show HTML. Raw HTML
in the text is shown as text, never passed through, and a Markdown image becomes a plain link: a mail
client fetches an image's address the moment the mail is opened, so an image would let words the model
was given (a forwarded newsletter, a clipped page) send data out with no click (consent, in DESIGN.md).
No part of a reply holds a remote image.
"""

from __future__ import annotations

import re
from datetime import datetime
from email.message import EmailMessage
from email.utils import format_datetime

from bot.bus import Button
from bot.channels.email.ledger import Thread
from bot.channels.html import markdown_html

# A subject for a mail that joins no thread (a reminder in a conversation that never mailed a subject).
FIRST_SUBJECT = "vaultbot"
_REPLIED = re.compile(r"^\s*(re|aw|sv|antw)\s*:", re.IGNORECASE)
_HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"></head>
<body style="font-family: -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif; line-height: 1.45">
{body}</body></html>
"""


def reply_mail(
    text: str,
    *,
    sender: str,
    recipient: str,
    thread: Thread | None,
    message_id: str,
    now: datetime,
    button: Button | None = None,
) -> EmailMessage:
    """The mail that carries ``text`` to ``recipient``, in ``thread`` when there is one."""
    if button is not None:
        # Mail has no buttons: the address itself, on a line of its own.
        text = f"{text}\n\n{button.text}: {button.url}"
    mail = EmailMessage()
    mail["From"] = sender
    mail["To"] = recipient
    mail["Subject"] = subject_of(thread)
    mail["Date"] = format_datetime(now)
    mail["Message-ID"] = message_id
    if thread is not None and thread.message_id is not None:
        mail["In-Reply-To"] = thread.message_id
    if thread is not None and thread.references:
        mail["References"] = " ".join(thread.references)
    mail["Auto-Submitted"] = "auto-replied"
    # Asks Exchange and Outlook not to send out-of-office and other automatic answers to it.
    mail["X-Auto-Response-Suppress"] = "All"
    mail.set_content(text)
    mail.add_alternative(_HTML.format(body=markdown_html(text)), subtype="html")
    return mail


def subject_of(thread: Thread | None) -> str:
    """``Re: `` and the thread's subject (once, however deep the thread), or :data:`FIRST_SUBJECT`."""
    subject = thread.subject.strip() if thread is not None else ""
    if not subject:
        return FIRST_SUBJECT
    return subject if _REPLIED.match(subject) else f"Re: {subject}"
