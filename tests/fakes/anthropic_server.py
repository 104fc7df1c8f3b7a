"""A local fake of the Anthropic Messages API on 127.0.0.1, for driving the real SDK in tests.

Script it like httpx's MockTransport: ``enqueue`` canned responses (``text``, ``tool_use``,
``status``, ``garbage``), or set ``handler`` to a function of the request body. Every request is
kept in ``requests`` (body and headers) for assertions.

A request with ``"stream": true`` (the SDK's ``messages.stream``) gets the same message as
server-sent events, as the API sends them: text in deltas of ``delta_chars`` characters, tool input
as partial JSON. ``streamed(...)`` sets how: ``pace(i)`` runs before delta ``i`` is sent (block on
an event to hold the stream mid-answer, or sleep to stream at a model's speed), ``cut_after``
ends the connection after that many deltas, before the answer is complete, and ``error_after``
sends an ``error`` event there instead (an ``overloaded_error``, as the API does mid-answer).

``GET /v1/models/{id}`` and ``GET /v1/models`` (the models API, which ``vaultbot doctor`` asks) answer
from ``models`` (None, the default: any name asked for is known); with ``key`` set, a models request
sent another key gets a 401 whose message quotes the key it was sent, as some services do, so tests
can check vaultbot never repeats it.

With ``prompt_cache=True`` the server keeps a prompt cache by the documented rules
(``tests/fakes/prompt_cache.py``) and answers every successful request with the input, cache-read
and cache-write tokens it would have cost, also kept in ``usages``.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.local_http import LocalServer
from tests.fakes.prompt_cache import InvalidImage, PromptCache, TooManyBreakpoints, count_tokens

_ids = itertools.count(1)


@dataclass
class Canned:
    """One HTTP answer."""

    status: int
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    delta_chars: int = 20
    pace: Callable[[int], None] | None = None
    cut_after: int | None = None
    error_after: int | None = None


def streamed(
    canned: Canned,
    *,
    delta_chars: int = 20,
    pace: Callable[[int], None] | None = None,
    cut_after: int | None = None,
    error_after: int | None = None,
) -> Canned:
    """``canned`` streamed in deltas of ``delta_chars``, paced by ``pace``, cut (or failing with an
    error event) after ``cut_after`` (``error_after``) deltas."""
    return replace(canned, delta_chars=delta_chars, pace=pace, cut_after=cut_after, error_after=error_after)


def sse_events(body: dict[str, Any], delta_chars: int) -> list[tuple[str, dict[str, Any]]]:
    """A message as the streaming API sends it: (event name, data) in order. Deltas are the
    ``content_block_delta`` events; usage arrives in ``message_start`` (input and cache) and
    ``message_delta`` (output), as the API reports it."""
    usage = dict(body["usage"])
    start = {**body, "content": [], "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(body["content"]):
        if block["type"] == "text":
            head, payload, kind, key = {"type": "text", "text": ""}, block["text"], "text_delta", "text"
        elif block["type"] == "tool_use":
            head = {**block, "input": {}}
            payload, kind, key = json.dumps(block["input"]), "input_json_delta", "partial_json"
        else:
            head, payload, kind, key = block, "", "", ""
        events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": head}))
        for at in range(0, len(payload), max(1, delta_chars)):
            delta = {"type": kind, key: payload[at : at + delta_chars]}
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    end = {"stop_reason": body["stop_reason"], "stop_sequence": body.get("stop_sequence")}
    events.append(
        ("message_delta", {"type": "message_delta", "delta": end, "usage": {"output_tokens": usage["output_tokens"]}})
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


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


class Held:
    """A handler that answers ``reply`` only once released, for a test that acts while a model call is
    in flight: ``asked`` is set when the request arrives; :meth:`release` lets the answer go (it goes
    after 30 s anyway, so a failing test never hangs the fake's server thread)."""

    def __init__(self, reply: Canned) -> None:
        self.asked = threading.Event()
        self._released = threading.Event()
        self._reply = reply

    def __call__(self, body: dict[str, Any]) -> Canned:
        self.asked.set()
        self._released.wait(timeout=30)
        return self._reply

    def release(self) -> None:
        """Let the held answer (and any later one) go."""
        self._released.set()


def status(code: int, error_type: str = "api_error", headers: dict[str, str] | None = None) -> Canned:
    """An API error such as 500, 529 (overloaded) or 429 (with ``retry-after``)."""
    return Canned(
        code, _error_body(error_type, f"fake {code}"), {"content-type": "application/json", **(headers or {})}
    )


def _error_body(error_type: str, text: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": error_type, "message": text}}).encode()


_JSON = {"content-type": "application/json"}


def _model_info(name: str) -> dict[str, Any]:
    """One entry of the models API, as it describes a model."""
    return {"type": "model", "id": name, "display_name": name, "created_at": "2026-01-01T00:00:00Z"}


def image_blocks(content: Any) -> list[dict[str, Any]]:
    """The image blocks in a message's content, those inside tool results included, in order."""
    if not isinstance(content, list):
        return []
    found = []
    for block in content:
        if block.get("type") == "image":
            found.append(block)
        elif block.get("type") == "tool_result":
            found += image_blocks(block.get("content"))
    return found


def _oversized_image(body: dict[str, Any]) -> str | None:
    """The API's answer to an image over 5 MB (counted on its base64), as it words it; None if there is none."""
    for message in body.get("messages") or []:
        for block in image_blocks(message.get("content")):
            size = len(block.get("source", {}).get("data", ""))
            if size > MAX_IMAGE_BASE64:
                return f"messages: image exceeds 5 MB maximum: {size} bytes > {MAX_IMAGE_BASE64} bytes"
    return None


MAX_IMAGE_BASE64 = 5 * 1024 * 1024


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

    def __init__(self, *, prompt_cache: bool = False) -> None:
        self.requests: list[Request] = []
        self.cache = PromptCache() if prompt_cache else None
        self.usages: list[dict[str, int]] = []  # with prompt_cache: each successful request's usage, in order
        self.handler: Callable[[dict[str, Any]], Canned] | None = None
        self.models: list[str] | None = None
        self.key: str | None = None
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
        if not request.path.startswith("/v1/messages"):  # as the API: it knows no other path (/v1/v1/…)
            return Canned(404, _error_body("not_found_error", "Not Found"), _JSON)
        with self._lock:
            too_big = _oversized_image(request.body)
            canned = self._script.popleft() if self._script and too_big is None else None
        if too_big is not None:
            return Canned(400, _error_body("invalid_request_error", too_big), {"content-type": "application/json"})
        if canned is None:
            canned = self.handler(request.body) if self.handler is not None else status(500, "api_error")
        return self._with_cache_usage(request.body, canned) if self.cache is not None else canned

    def _models(self, request: Request) -> Canned:
        with self._lock:
            self.requests.append(request)
        sent = request.headers.get("x-api-key") or request.headers.get("authorization", "").removeprefix("Bearer ")
        if self.key is not None and sent != self.key:
            return Canned(401, _error_body("authentication_error", f"invalid x-api-key {sent}"), _JSON)
        if not request.path.startswith("/v1/models"):
            return Canned(404, _error_body("not_found_error", "Not Found"), _JSON)
        asked = request.path.split("?")[0].removeprefix("/v1/models").strip("/")
        if not asked:
            listed = [_model_info(name) for name in self.models or []]
            return Canned(200, json.dumps({"data": listed, "has_more": False}).encode(), _JSON)
        if self.models is not None and asked not in self.models:
            return Canned(404, _error_body("not_found_error", f"model: {asked}"), _JSON)
        return Canned(200, json.dumps(_model_info(asked)).encode(), _JSON)

    def _with_cache_usage(self, request: dict[str, Any], canned: Canned) -> Canned:
        assert self.cache is not None
        if canned.status != 200 or not canned.body.startswith(b"{"):
            return canned  # a failed request reads and writes nothing
        try:
            usage = self.cache.account(request)
        except (TooManyBreakpoints, InvalidImage) as exc:
            return Canned(400, _error_body("invalid_request_error", str(exc)), {"content-type": "application/json"})
        body = json.loads(canned.body)
        output = sum(count_tokens(json.dumps(b, ensure_ascii=False)) for b in body["content"])
        body["usage"] = {**usage.as_dict(), "output_tokens": output}
        with self._lock:
            self.usages.append(body["usage"])
        return Canned(200, json.dumps(body).encode(), canned.headers)

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                headers = {k.lower(): v for k, v in self.headers.items()}
                canned = fake._models(Request(self.path, headers, {}))
                self.send_response(canned.status)
                for key, value in canned.headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(canned.body)))
                self.end_headers()
                self.wfile.write(canned.body)

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                body = json.loads(raw) if raw else {}
                canned = fake._answer(Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                if body.get("stream") and canned.status == 200 and canned.body.startswith(b"{"):
                    self._stream(canned)
                    return
                self.send_response(canned.status)
                for key, value in canned.headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(canned.body)))
                self.end_headers()
                self.wfile.write(canned.body)

            def _stream(self, canned: Canned) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                deltas = 0
                for name, data in sse_events(json.loads(canned.body), canned.delta_chars):
                    if name == "content_block_delta":
                        if canned.error_after is not None and deltas >= canned.error_after:
                            name, data = "error", json.loads(_error_body("overloaded_error", "Overloaded"))
                        elif canned.cut_after is not None and deltas >= canned.cut_after:
                            self.close_connection = True
                            self.wfile.write(b"0\r\n\r\n")
                            return
                        if canned.pace is not None:
                            canned.pace(deltas)
                        deltas += 1
                    event = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
                    self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                    self.wfile.flush()
                    if name == "error":
                        break
                self.wfile.write(b"0\r\n\r\n")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
