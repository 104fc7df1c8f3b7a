"""Single-use sign-in links to the review page. ``/review`` in chat answers with one rather than with the
page's long-lived token, which would travel through the chat service and stay in the chat's history.

A link's code is the time it was made (in milliseconds), a random nonce, and an HMAC-SHA256 of both under
a key derived from the page's token. So whoever knows the token makes one (the bot answering /review,
perhaps in another process than the page's) and the page checks it without a table both share (its
connection to the store cannot write). The page (``bot.web``) accepts a code once, for
:data:`LINK_SECONDS` after it was made, and never one made before the page started.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from urllib.parse import quote

__all__ = ["LINK_SECONDS", "SIGN_IN_PATH", "LinkCode", "make_code", "read_code", "sign_in_url"]

# Long enough to switch to a browser and tap; short enough that a link found later opens nothing.
LINK_SECONDS = 300
# Where the page redeems a code.
SIGN_IN_PATH = "/sign-in"


@dataclass(frozen=True)
class LinkCode:
    """What a genuine code says: when it was made (ms since the epoch) and its nonce (its identity)."""

    made_ms: int
    nonce: str


def _mac(token: str, body: str) -> str:
    key = hmac.new(token.encode(), b"vaultbot review sign-in link", hashlib.sha256).digest()
    return hmac.new(key, body.encode(), hashlib.sha256).hexdigest()


def make_code(token: str, now: float) -> str:
    """A new code for the page whose token is ``token``, made at ``now`` (seconds since the epoch)."""
    body = f"{int(now * 1000):x}.{secrets.token_hex(16)}"
    return f"{body}.{_mac(token, body)}"


def read_code(token: str, code: str) -> LinkCode:
    """What ``code`` says, if it was made with ``token``; otherwise ValueError."""
    body, _, mac = code.rpartition(".")
    made, _, nonce = body.partition(".")
    if not hmac.compare_digest(mac.encode(), _mac(token, body).encode()):
        raise ValueError("not a sign-in code of this page")
    return LinkCode(int(made, 16), nonce)


def sign_in_url(address: str, token: str, now: float) -> str:
    """A link that signs in once at the page served at ``address`` (``http://127.0.0.1:8765/``)."""
    return f"{address.rstrip('/')}{SIGN_IN_PATH}?code={quote(make_code(token, now), safe='')}"
