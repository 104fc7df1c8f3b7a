"""Webhook mode: Telegram posts each update to us; we answer 200 only once it is on the bus.

An answer other than 200 (a wrong secret aside) makes Telegram deliver the update again later,
so an update is never acknowledged before it is durable. The server is tornado, the one
python-telegram-bot's own webhook support uses.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

import tornado.httpserver
import tornado.web

from bot.channels.telegram.errors import CannotReceive

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
# An update is a few kilobytes; files come by reference, not in the body.
MAX_BODY_BYTES = 1024 * 1024

Receive = Callable[[dict[str, Any]], Awaitable[None]]


class WebhookServer:
    """Listens on ``address:port`` at ``path`` until :meth:`stop`."""

    def __init__(self, receive: Receive, *, secret: str, path: str, address: str, port: int) -> None:
        self._app = tornado.web.Application([(path, _UpdateHandler, {"receive": receive, "secret": secret})])
        self._address = address
        self._port = port
        self._server: tornado.httpserver.HTTPServer | None = None

    def start(self) -> None:
        """Start listening (on the running event loop); raises :class:`CannotReceive`."""
        try:
            self._server = self._app.listen(self._port, address=self._address, max_body_size=MAX_BODY_BYTES)
        except OSError as exc:
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise CannotReceive(
                f"cannot receive Telegram's updates on {self._address}:{self._port}: {reason}"
            ) from None

    async def stop(self) -> None:
        """Stop listening and close open connections."""
        if self._server is not None:
            self._server.stop()
            await self._server.close_all_connections()


class _UpdateHandler(tornado.web.RequestHandler):
    def initialize(self, receive: Receive, secret: str) -> None:
        self._receive = receive
        self._secret = secret

    async def post(self) -> None:
        given = self.request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), self._secret.encode()):
            log.warning("telegram webhook: refused a post without the right secret from %s", self.request.remote_ip)
            self.set_status(403)
            return
        try:
            update = json.loads(self.request.body)
        except ValueError:
            self.set_status(400)
            return
        if not isinstance(update, dict) or not isinstance(update.get("update_id"), int):
            self.set_status(400)
            return
        await self._receive(update)  # raises (→ 500, Telegram retries) unless the update is stored
        self.set_status(200)
