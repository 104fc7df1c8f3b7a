"""Webhook mode: Telegram posts each update to us; we answer 200 only once it is on the bus.

An answer other than 200 (a wrong secret aside) makes Telegram deliver the update again later,
so an update is never acknowledged before it is durable. Served by Starlette and uvicorn, the
same stack and the same way of serving as the review page.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bot.http_server import HttpServer

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
# An update is a few kilobytes; files come by reference, not in the body.
MAX_BODY_BYTES = 1024 * 1024
# Telegram nests an update a dozen levels deep at most (a message, a reply in it, its keyboard's rows).
# Deeper is no update, and the parser, python-telegram-bot and the bus would each recurse to its bottom.
MAX_DEPTH = 64

Receive = Callable[[dict[str, Any]], Awaitable[None]]


class WebhookServer:
    """Telegram's posts to ``path``: :meth:`listen` binds ``address:port``, and what it returns serves them."""

    def __init__(self, receive: Receive, *, secret: str, path: str, address: str, port: int) -> None:
        self._receive = receive
        self._secret = secret.encode()
        self._address = address
        self._port = port
        self.app = Starlette(routes=[Route(path, self._post, methods=["POST"])])

    def listen(self) -> HttpServer:
        """Bind the address now (a port in use fails here, before Telegram is told to post to it)."""
        return HttpServer(self.app, self._address, self._port, what="the Telegram webhook")

    async def _post(self, request: Request) -> Response:
        """One update: 200 once it is stored; 403 without the secret, 413 or 400 for a body that is no
        update (not JSON, not an object with an ``update_id``, nested deeper than :data:`MAX_DEPTH`);
        500 (Telegram posts it again) when it could not be stored."""
        given = request.headers.get(SECRET_HEADER, "")
        if not hmac.compare_digest(given.encode(), self._secret):
            where = request.client.host if request.client else "an unknown address"
            log.warning("telegram webhook: refused a post without the right secret from %s", where)
            return Response(status_code=403)
        body = await _body(request)
        if body is None:
            return Response(status_code=413)
        try:
            update = json.loads(body)
        except (ValueError, RecursionError):  # RecursionError: nested past the parser's own limit
            return Response(status_code=400)
        if not isinstance(update, dict) or not isinstance(update.get("update_id"), int) or _deeper(update, MAX_DEPTH):
            return Response(status_code=400)
        try:
            await self._receive(update)
        except Exception:  # whatever kept it off the bus: Telegram keeps the update and posts it again
            log.exception("telegram webhook: could not store update %s; answered 500", update["update_id"])
            return Response(status_code=500)
        return Response(status_code=200)


async def _body(request: Request) -> bytes | None:
    """The body, or None once it passes :data:`MAX_BODY_BYTES` (read no further than that)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            return None
    return bytes(body)


def _deeper(value: object, limit: int) -> bool:
    """Whether ``value`` (parsed JSON) nests lists and objects more than ``limit`` deep; walked without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
