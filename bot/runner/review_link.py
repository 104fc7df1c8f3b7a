"""Where the review page is served, for ``/review`` in chat: by this process, or by another
``vaultbot run`` or ``vaultbot review`` on this machine that recorded its address in the store
before serving. A recorded address is offered only while its process is alive and its port
answers, so a page that stopped (even killed) is never offered."""

from __future__ import annotations

import asyncio
import hashlib
import os
from dataclasses import dataclass
from urllib.parse import quote

from pydantic import SecretStr

from bot.store import ServedPage, Store

__all__ = ["ReviewLink"]

# How long a recorded page's port may take to accept a connection (it is on this machine).
_PROBE_SECONDS = 1.0
# Where to knock for a page listening on every address.
_LOOPBACK = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}


@dataclass
class ReviewLink:
    """The review page's address: ``url`` once this process serves it (set by whoever serves it),
    else one another process recorded. ``token`` is this process's configured token, if any;
    ``app_url`` the page's address as a Telegram Mini App, when it has a public one."""

    url: str | None = None
    token: SecretStr | None = None
    app_url: str | None = None

    async def find(self, store: Store) -> str | None:
        """The address to open (token included when this process knows the page's token), or None
        when no live process serves the page."""
        if self.url is not None:
            return self.url
        configured = self.token.get_secret_value() if self.token else None
        tokens = [t for t in (configured, await store.stored_review_token()) if t]
        for page in await store.review_pages():
            if await _alive(page):
                known = next((t for t in tokens if hashlib.sha256(t.encode()).hexdigest() == page.token_sha256), None)
                if known is None:
                    return f"{page.address} (with the token in the address `vaultbot review` printed)"
                return f"{page.address}?token={quote(known, safe='')}"
        return None


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
