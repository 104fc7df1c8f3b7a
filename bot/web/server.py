"""Serving the review page: the shared :class:`~bot.http_server.HttpServer`, and its address with the token."""

from __future__ import annotations

from urllib.parse import quote

from starlette.applications import Starlette

from bot.http_server import CannotListen, HttpServer

__all__ = ["CannotListen", "ReviewServer", "review_url"]


def review_url(host: str, port: int, token: str) -> str:
    """``http://127.0.0.1:8765/?token=…``: the address to open, token included."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={quote(token, safe='')}"


class ReviewServer(HttpServer):
    """The page on ``host``:``port`` (0: any free port). Raises :class:`CannotListen`."""

    def __init__(self, app: Starlette, host: str, port: int) -> None:
        super().__init__(app, host, port, what="the review page")

    def url(self, token: str) -> str:
        """The address with the token."""
        return review_url(self.host, self.port, token)
