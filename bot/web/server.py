"""Serving the review page: the shared :class:`~bot.http_server.HttpServer`, and its address with the token."""

from __future__ import annotations

import hashlib
import os
from urllib.parse import quote

from starlette.applications import Starlette

from bot.http_server import CannotListen, HttpServer
from bot.store import ServedPage

__all__ = ["CannotListen", "ReviewServer", "review_url"]


def review_url(host: str, port: int, token: str) -> str:
    """``http://127.0.0.1:8765/?token=…``: the address to open, token included."""
    return f"{_address(host, port)}?token={quote(token, safe='')}"


def _address(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


class ReviewServer(HttpServer):
    """The page on ``host``:``port`` (0: any free port). Raises :class:`CannotListen`."""

    def __init__(self, app: Starlette, host: str, port: int) -> None:
        super().__init__(app, host, port, what="the review page")

    @property
    def address(self) -> str:
        """``http://127.0.0.1:8765/``: where the page is served."""
        return _address(self.host, self.port)

    def url(self, token: str) -> str:
        """The address with the token."""
        return review_url(self.host, self.port, token)

    def served(self, token: str) -> ServedPage:
        """What this process records in the store before it serves, so that ``/review`` in chat
        finds the page (the token itself is not kept: only its digest)."""
        digest = hashlib.sha256(token.encode()).hexdigest()
        return ServedPage(os.getpid(), self.address, self.host, self.port, digest)
