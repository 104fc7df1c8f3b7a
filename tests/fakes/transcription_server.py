"""A local fake of an OpenAI-compatible speech-to-text API on 127.0.0.1 (``/v1/audio/transcriptions``
and ``/v1/models``), for driving vaultbot's real transcription client in tests.

Script its faults like the fake Telegram's: ``fail(times, status, retry_after=…)``, ``garbage(times)``,
``hang()`` (every transcription request waits until ``release()``). A request whose bearer key is not
``key`` gets a 401 whose message quotes the key it was sent, as some services do, so tests can check
vaultbot never repeats it. Every request is kept in ``requests``.
"""

from __future__ import annotations

import asyncio
import email.parser
import email.policy
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.local_http import LocalServer

KEY = "sk-fake-transcribe-0123456789abcdef"


@dataclass
class Heard:
    """One request as the fake received it."""

    method: str
    path: str
    authorization: str | None
    fields: dict[str, str] = field(default_factory=dict)
    filename: str | None = None
    content_type: str | None = None
    audio: bytes = b""
    at: float = 0.0  # time.monotonic() on arrival


@dataclass
class _Fault:
    status: int
    body: bytes
    headers: dict[str, str]


class FakeTranscription:
    """The server. Use as a context manager; hand ``base_url`` to vaultbot."""

    def __init__(
        self, *, key: str | None = KEY, text: str = "Buy oat milk and call the plumber about the tap."
    ) -> None:
        self.key = key
        self.text = text
        self.models: list[str] | None = ["whisper-1"]  # None: no /v1/models route, as some local servers
        self.requests: list[Heard] = []
        self._faults: deque[_Fault] = deque()
        self._open = threading.Event()
        self._open.set()
        self._lock = threading.Lock()
        self._server = LocalServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeTranscription:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()

    # ------------------------------------------------------------------ scripting

    def fail(self, times: int, status: int = 500, *, retry_after: float | None = None, message: str = "boom") -> None:
        """The next ``times`` transcription requests get ``status`` (with ``Retry-After`` if given)."""
        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
        body = json.dumps({"error": {"message": message, "type": "server_error"}}).encode()
        with self._lock:
            self._faults.extend(_Fault(status, body, headers) for _ in range(times))

    def garbage(self, times: int) -> None:
        """The next ``times`` transcription requests get a 200 whose body is not JSON."""
        with self._lock:
            self._faults.extend(_Fault(200, b"<html>upstream hiccup</html>", {}) for _ in range(times))

    def hang(self) -> None:
        """Transcription requests wait (the connection open, no answer) until :meth:`release`."""
        self._open.clear()

    def release(self) -> None:
        """Let waiting and later requests through."""
        self._open.set()

    def transcriptions(self) -> list[Heard]:
        """The transcription requests received so far (a hanging one included)."""
        with self._lock:
            return [r for r in self.requests if r.path.endswith("/audio/transcriptions")]

    async def await_for(self, predicate: Callable[[FakeTranscription], bool], timeout: float = 10.0) -> None:
        """Wait until ``predicate(self)`` holds, without blocking the event loop."""
        deadline = time.monotonic() + timeout
        while not predicate(self):
            if time.monotonic() >= deadline:
                raise AssertionError(f"FakeTranscription: condition not true after {timeout}s; heard {self.requests}")
            await asyncio.sleep(0.01)

    # ------------------------------------------------------------------ answering

    def _answer(self, heard: Heard) -> tuple[int, bytes, dict[str, str]]:
        with self._lock:
            self.requests.append(heard)
        sent_key = (heard.authorization or "").removeprefix("Bearer ")
        if self.key is not None and sent_key != self.key:
            message = f"Incorrect API key provided: {sent_key}."
            return 401, json.dumps({"error": {"message": message, "type": "invalid_request_error"}}).encode(), {}
        if heard.path == "/v1/models" and heard.method == "GET" and self.models is not None:
            data = [{"id": m, "object": "model"} for m in self.models]
            return 200, json.dumps({"object": "list", "data": data}).encode(), {}
        if heard.path != "/v1/audio/transcriptions" or heard.method != "POST":
            return 404, json.dumps({"error": {"message": "Not found"}}).encode(), {}
        if heard.fields.get("model") is None or heard.filename is None:
            return 400, json.dumps({"error": {"message": "file and model are required"}}).encode(), {}
        self._open.wait()
        with self._lock:
            fault = self._faults.popleft() if self._faults else None
        if fault is not None:
            return fault.status, fault.body, fault.headers
        return 200, json.dumps({"text": self.text}).encode(), {}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("content-length", 0) or 0)
                raw = self.rfile.read(length) if length else b""
                heard = Heard(self.command, self.path, self.headers.get("authorization"), at=time.monotonic())
                _read_form(self.headers.get("content-type", ""), raw, heard)
                status, body, headers = fake._answer(heard)
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            do_POST = _serve  # noqa: N815 (http.server's naming)
            do_GET = _serve  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _read_form(content_type: str, raw: bytes, heard: Heard) -> None:
    """Fill ``heard`` from a multipart/form-data body: text fields, and the uploaded file."""
    if not content_type.lower().startswith("multipart/form-data"):
        return
    head = f"Content-Type: {content_type}\r\nMIME-Version: 1.0\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw)
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        if part.get_filename() is not None:
            heard.filename, heard.content_type, heard.audio = part.get_filename(), part.get_content_type(), payload
        elif name is not None:
            heard.fields[str(name)] = payload.decode("utf-8")
