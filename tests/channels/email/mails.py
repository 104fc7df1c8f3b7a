"""Mail as a person's (or a robot's, or a forger's) mail client and server would write it, for the tests."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid

ANN = "ann@example.com"  # the allowlisted person
TRUSTED = "mx.example.org"  # the receiving server's authserv-id
_numbers = itertools.count(1)


def passing(domain: str = "example.com", sender: str = ANN) -> str:
    """The receiving server's Authentication-Results for a mail whose DKIM and SPF pass for ``domain``."""
    return f"{TRUSTED}; dkim=pass header.d={domain} header.s=s1; spf=pass smtp.mailfrom={sender}"


def mail(
    text: str = "Buy oat milk",
    *,
    sender: str = f"Ann Example <{ANN}>",
    subject: str = "Shopping",
    results: list[str] | None = None,
    headers: dict[str, str] | None = None,
    message_id: str | None = "auto",
    in_reply_to: str | None = None,
    references: str | None = None,
    html: str | None = None,
    files: list[tuple[str, str, bytes]] | None = None,
) -> bytes:
    """A mail to the bot. ``results`` are its Authentication-Results headers, top first (by default the
    trusted server's, passing for example.com); ``files`` are (name, content type, bytes)."""
    message = EmailMessage()
    for header in passing_results() if results is None else results:
        message["Authentication-Results"] = header
    message["From"] = sender
    message["To"] = "vaultbot <bot@example.org>"
    message["Subject"] = subject
    message["Date"] = format_datetime(datetime(2026, 11, 23, 14, 5, tzinfo=UTC))
    if message_id == "auto":
        message["Message-ID"] = make_msgid(f"m{next(_numbers)}", domain="example.com")
    elif message_id is not None:
        message["Message-ID"] = message_id
    if in_reply_to:
        message["In-Reply-To"] = in_reply_to
    if references:
        message["References"] = references
    for name, value in (headers or {}).items():
        message[name] = value
    if html is not None and not text:
        message.set_content(html, subtype="html")
    else:
        message.set_content(text)
        if html is not None:
            message.add_alternative(html, subtype="html")
    for name, content_type, data in files or []:
        maintype, subtype = content_type.split("/", 1)
        message.add_attachment(data, maintype=maintype, subtype=subtype, filename=name)
    return bytes(message)


def passing_results() -> list[str]:
    return [passing()]
