"""Serving an ASGI app with uvicorn on a socket bound up front (so the address, and a port already in
use, are known before anything is printed or announced), until a stop event is set. The review page
and the Telegram webhook are both served this way."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
from collections.abc import Iterator

import uvicorn
from starlette.types import ASGIApp

__all__ = ["CannotListen", "HttpServer"]


class CannotListen(Exception):
    """The address is taken or not this machine's; the message says which."""


class _Server(uvicorn.Server):
    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # Signals belong to the command that serves; it stops us through should_exit.
        yield


class HttpServer:
    """``app`` on ``host``:``port`` (0: any free port), bound at once; ``what`` names it in the error.
    Raises :class:`CannotListen`."""

    def __init__(self, app: ASGIApp, host: str, port: int, *, what: str) -> None:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            self._socket = socket.create_server((host, port), family=family)
        except OSError as exc:
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise CannotListen(f"cannot serve {what} on {host}:{port}: {reason}") from None
        self.host = host
        self.port: int = self._socket.getsockname()[1]
        # No access log: the review page's addresses carry its token.
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        self._server = _Server(config)

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
