"""A local fake of the Anthropic Messages API on 127.0.0.1, for driving the real SDK in tests.

Script it like httpx's MockTransport: ``enqueue`` canned responses (``text``, ``tool_use``,
``status``, ``garbage``), or set ``handler`` to a function of the request body. Every request is
kept in ``requests`` (body and headers) for assertions.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.local_http import LocalServer

_ids = itertools.count(1)


@dataclass
class Canned:
    """One HTTP answer."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


def message(content: list[dict[str, Any]], stop_reason: str, usage: dict[str, int] | None = None) -> Canned:
    """A successful Messages API response."""
    body = {
        "id": f"msg_{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": "claude-fake",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage
        or {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }
    return Canned(200, json.dumps(body).encode(), {"content-type": "application/json"})


def text(reply: str, usage: dict[str, int] | None = None) -> Canned:
    """The model ends its turn with ``reply``."""
    return message([{"type": "text", "text": reply}], "end_turn", usage)


def tool_use(*calls: tuple[str, dict[str, Any]], preamble: str | None = None) -> Canned:
    """The model asks for one or more tool calls."""
    content: list[dict[str, Any]] = [{"type": "text", "text": preamble}] if preamble else []
    content += [{"type": "tool_use", "id": f"toolu_{next(_ids)}", "name": n, "input": i} for n, i in calls]
    return message(content, "tool_use")


def status(code: int, error_type: str = "api_error", headers: dict[str, str] | None = None) -> Canned:
    """An API error such as 500, 529 (overloaded) or 429 (with ``retry-after``)."""
    body = {"type": "error", "error": {"type": error_type, "message": f"fake {code}"}}
    return Canned(code, json.dumps(body).encode(), {"content-type": "application/json", **(headers or {})})


def garbage() -> Canned:
    """A 200 whose body is not JSON."""
    return Canned(200, b"<html>definitely not json", {"content-type": "application/json"})


@dataclass
class Request:
    """What the SDK sent."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class FakeAnthropic:
    """The server. Use as a context manager; ``base_url`` goes into ANTHROPIC_BASE_URL."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.handler: Callable[[dict[str, Any]], Canned] | None = None
        self._script: deque[Canned] = deque()
        self._lock = threading.Lock()
        self._server = LocalServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def enqueue(self, *responses: Canned) -> None:
        """Answer the next requests with these, in order."""
        with self._lock:
            self._script.extend(responses)

    @property
    def pending(self) -> int:
        """Scripted responses not yet served."""
        with self._lock:
            return len(self._script)

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, request: Request) -> Canned:
        with self._lock:
            self.requests.append(request)
            if self._script:
                return self._script.popleft()
        if self.handler is not None:
            return self.handler(request.body)
        return status(500, "api_error")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                body = json.loads(raw) if raw else {}
                canned = fake._answer(Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(canned.status)
                for key, value in canned.headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(canned.body)))
                self.end_headers()
                self.wfile.write(canned.body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
