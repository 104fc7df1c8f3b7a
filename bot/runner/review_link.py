"""Where the review page is served, for ``/review`` in chat: by this process, or by another
``vaultbot run`` or ``vaultbot review`` on this machine that recorded its address in the store
before serving. A recorded address is offered only while its process is alive and its port
answers, so a page that stopped (even killed) is never offered.

What goes into the chat is a single-use sign-in link that lasts minutes (``bot.sign_in_links``),
never the page's long-lived token: a chat's messages pass through the chat service and stay in its
history."""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from pydantic import SecretStr

from bot.sign_in_links import LINK_SECONDS, sign_in_url
from bot.store import ServedPage, Store

__all__ = ["ReviewLink"]

# How long a recorded page's port may take to accept a connection (it is on this machine).
_PROBE_SECONDS = 1.0
# Where to knock for a page listening on every address.
_LOOPBACK = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}
# Addresses that name the machine they are opened on: on a phone, the phone.
_THIS_MACHINE = {"127.0.0.1", "localhost", "::1"}


@dataclass
class ReviewLink:
    """How to reach the review page. ``page`` is the address and token of the page this process
    serves (set by whoever serves it); ``token`` this process's configured token, if any; ``app_url``
    the page's address as a Telegram Mini App, when it has a public one."""

    token: SecretStr | None = None
    app_url: str | None = None
    page: tuple[str, str] | None = None
    clock: Callable[[], float] = field(default=time.time)

    async def find(self, store: Store) -> str | None:
        """A single-use sign-in link to the page, saying how long it lasts (or the page's address alone
        when this process does not know its token), or None when no live process serves the page."""
        if self.page is not None:
            return self._link(*self.page)
        configured = self.token.get_secret_value() if self.token else None
        tokens = [t for t in (configured, await store.stored_review_token()) if t]
        for page in await store.review_pages():
            if await _alive(page):
                known = next((t for t in tokens if hashlib.sha256(t.encode()).hexdigest() == page.token_sha256), None)
                if known is None:
                    return f"{page.address} (with the token in the address `vaultbot review` printed)"
                return self._link(page.address, known)
        return None

    def _link(self, address: str, token: str) -> str:
        minutes = LINK_SECONDS // 60
        link = f"{sign_in_url(address, token, self.clock())} (it signs you in once, within {minutes} minutes)"
        return link + _where_it_opens(address)


def _where_it_opens(address: str) -> str:
    """For a page on this machine's loopback address: that the link opens only here, and how to reach
    it from a phone or another computer."""
    parts = urlsplit(address)
    if parts.hostname not in _THIS_MACHINE:
        return ""
    port = parts.port or 80
    return (
        f"\nIt opens on the machine vaultbot runs on ({parts.hostname} is that machine), not on a phone. "
        "To open it from your phone, give the page a public address (VAULTBOT_REVIEW__PUBLIC_URL, behind a "
        f"reverse proxy with HTTPS); from another computer, an SSH tunnel: ssh -L {port}:127.0.0.1:{port} "
        "you@that-machine, then open the link there."
    )


async def _alive(page: ServedPage) -> bool:
    """The process that recorded ``page`` is alive and something answers on its port."""
    try:
        os.kill(page.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        pass
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(_LOOPBACK.get(page.host, page.host), page.port), _PROBE_SECONDS
        )
    except (OSError, TimeoutError):
        return False
    writer.close()
    await writer.wait_closed()
    return True
