"""Serving the review page with uvicorn on a socket bound up front (so the address, and a port
already in use, are known before anything is printed), until a stop event is set."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import socket
from collections.abc import Iterator
from urllib.parse import quote

import uvicorn
from starlette.applications import Starlette

from bot.store import ServedPage

__all__ = ["CannotListen", "ReviewServer", "review_url"]


def review_url(host: str, port: int, token: str) -> str:
    """``http://127.0.0.1:8765/?token=…``: the address to open, token included."""
    return f"{_address(host, port)}?token={quote(token, safe='')}"


def _address(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


class CannotListen(Exception):
    """The page's address is taken or not this machine's; the message says which."""


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Signals belong to the command that serves the page; it stops us through should_exit.
        yield


class ReviewServer:
    """The page on ``host``:``port`` (0: any free port). Raises :class:`CannotListen`."""

    def __init__(self, app: Starlette, host: str, port: int) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            self._socket = socket.create_server((host, port), family=family)
        except OSError as exc:
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise CannotListen(f"cannot serve the review page on {host}:{port}: {reason}") from None
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        # No access log: every address it would write carries the token.
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self._server = _Server(config)

    def url(self, token: str) -> str:
        """The address with the token."""
        return review_url(self.host, self.port, token)

    def served(self, token: str) -> ServedPage:
        """What this process records in the store before it serves, so that ``/review`` in chat
        finds the page (the token itself is not kept: only its digest)."""
        digest = hashlib.sha256(token.encode()).hexdigest()
        return ServedPage(os.getpid(), _address(self.host, self.port), self.host, self.port, digest)

    async def serve(self, stop: asyncio.Event) -> None:
        """Answer requests until ``stop`` is set; then finish those in flight and close."""
        serving = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        stopped = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait([serving, stopped], return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            self._server.should_exit = True
            await serving
            self._socket.close()
