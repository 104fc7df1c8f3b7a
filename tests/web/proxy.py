"""A reverse proxy for tests, as Caddy or nginx would stand in front of the review page at a path:
``/app/…`` forwarded to the page either with the path (``handle``, nginx's ``proxy_pass`` without a
URI) or without it (``handle_path``, ``proxy_pass http://…/``), the ``Host`` header passed on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import Receive, Scope, Send

from bot.http_server import HttpServer

# Hop-by-hop headers and those httpx sets itself, which a proxy does not copy.
_DROPPED = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}


class PathProxy:
    """ASGI app: ``prefix``/… to ``upstream``, the prefix kept or stripped."""

    def __init__(self, upstream: str, prefix: str, *, strip: bool, client: httpx.AsyncClient) -> None:
        self._upstream = upstream
        self._prefix = prefix
        self._strip = strip
        self._client = client

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        path = request.url.path
        if path != self._prefix and not path.startswith(self._prefix + "/"):
            await PlainTextResponse("not behind the proxy's path", status_code=404)(scope, receive, send)
            return
        forwarded = (path.removeprefix(self._prefix) or "/") if self._strip else path
        target = self._upstream + httpx.URL(forwarded).raw_path.decode()
        if request.url.query:
            target += "?" + request.url.query
        headers = [(k, v) for k, v in request.headers.raw if k.decode().lower() not in _DROPPED]
        answer = await self._client.request(request.method, target, headers=headers, content=await request.body())
        response = Response(answer.content, status_code=answer.status_code)
        response.raw_headers = [(k, v) for k, v in answer.headers.raw if k.decode().lower() not in _DROPPED] + [
            (b"content-length", str(len(answer.content)).encode())
        ]
        await response(scope, receive, send)


@asynccontextmanager
async def path_proxy(upstream: str, prefix: str, *, strip: bool) -> AsyncIterator[str]:
    """A proxy on 127.0.0.1 (any free port) in front of ``upstream``; yields its base address."""
    async with httpx.AsyncClient(follow_redirects=False) as client:
        server = HttpServer(PathProxy(upstream, prefix, strip=strip, client=client), "127.0.0.1", 0, what="a proxy")
        stop = asyncio.Event()
        serving = asyncio.create_task(server.serve(stop))
        try:
            yield f"http://127.0.0.1:{server.port}"
        finally:
            stop.set()
            await asyncio.wait_for(serving, 10)
