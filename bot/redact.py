"""What may be shown of a text that can carry a secret: an address without the user name and
password some people put in it, a library's message without the token it quoted."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["HIDDEN", "without_credentials", "without_secret"]

HIDDEN = "***"


def without_credentials(url: str) -> str:
    """``url`` without a user name or password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:  # a port that is no number: shown as it was written, still without credentials
        port = None
        host = parts.netloc.rpartition("@")[2]
    netloc = f"{host}:{port}" if port else host
    return urlunsplit(parts._replace(netloc=netloc))


def without_secret(text: str, secret: str) -> str:
    """``text`` with ``secret`` taken out, and its part after a colon too (a Telegram bot token is
    ``id:secret``, and an address that joins it to a port number splits it there)."""
    hidden = text.replace(secret, HIDDEN)
    _, colon, tail = secret.partition(":")
    if colon and len(tail) >= 8:
        hidden = hidden.replace(tail, HIDDEN)
    return hidden
