"""A real MCP server (the SDK's ``MCPServer``) over streamable HTTP on 127.0.0.1, served by uvicorn
in a thread. It answers only requests that carry ``Authorization: Bearer TOKEN``, and its
``whoami`` tool echoes that token back, as a careless server would."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send


class _Bearer:
    """Refuses (401) any request without the token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app, self._expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != self._expected:
            await send({"type": "http.response.start", "status": 401, "headers": []})
            await send({"type": "http.response.body", "body": b"no"})
            return
        await self._app(scope, receive, send)


class HttpMcpServer:
    """Use as a context manager; ``url`` is the endpoint, ``seen`` counts authorised requests."""

    def __init__(self, token: str) -> None:
        self.token = token
        server = MCPServer("http-test-server")

        @server.tool(description="Add two numbers.")
        def add(a: int, b: int) -> str:
            return str(a + b)

        @server.tool(description="Say which token the request carried.")
        def whoami() -> str:
            return f"you are Bearer {token}"

        app = server.streamable_http_app(json_response=True)
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self._socket = sock
        config = uvicorn.Config(_Bearer(app, token), log_level="warning", lifespan="on")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._socket.getsockname()[:2]
        return f"http://{host}:{port}/mcp"

    def __enter__(self) -> HttpMcpServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert time.monotonic() < deadline, "the MCP HTTP server did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()
