"""A small web site on 127.0.0.1 for clip_link: the fixture pages of tests/clip/pages, and the
pages that go wrong (redirect chains and loops, a gzip bomb, a slow and an endless body, a page in
Latin-1, one that is all script, an image, a PDF, a plain-text file)."""

from __future__ import annotations

import functools
import gzip
import struct
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import unquote_plus

from tests.fakes.local_http import LocalServer

PAGES = Path(__file__).parent.parent / "clip" / "pages"
# What a route answers: status, headers, and the body (bytes, or a function writing it to the socket).
Answer = tuple[int, dict[str, str], bytes | Callable[[BaseHTTPRequestHandler], None]]


def html(body: str, charset: str = "utf-8") -> Answer:
    return 200, {"Content-Type": f"text/html; charset={charset}"}, body.encode(charset)


class FakeWeb:
    """The server. ``routes`` maps a path to its answer; ``hits`` counts requests per path, ``queries``
    keeps each request's query string (decoded), per path."""

    def __init__(self) -> None:
        self.routes: dict[str, Answer] = {}
        self.hits: dict[str, int] = {}
        self.queries: dict[str, list[str]] = {}
        self._stop = threading.Event()
        for page in PAGES.glob("*.html"):
            self.routes[f"/{page.stem}"] = html(page.read_text(encoding="utf-8"))
        self._server = LocalServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def url(self, path: str) -> str:
        return self.base_url + path

    def redirect(self, path: str, to: str, status: int = 302) -> None:
        self.routes[path] = (status, {"Location": to}, b"")

    def gzip_bomb(self, path: str, size: int, codings: str = "gzip") -> None:
        """``size`` bytes of zeros (whole mebibytes) sent under ``codings``, each a gzip layer: a thousandth
        of that on the wire for one layer, 2.5 KB for a gibibyte under two."""
        headers = {"Content-Type": "text/html", "Content-Encoding": codings}
        self.routes[path] = (200, headers, stacked_zeros(size, len(codings.split(","))))

    def dribble(self, path: str, *, endless: bool) -> None:
        """A page whose body arrives a few bytes a second: for ever, or for about a minute."""

        def write(handler: BaseHTTPRequestHandler) -> None:
            handler.wfile.write(b"<html><body><p>")
            for _ in range(10**9 if endless else 60):
                if self._stop.wait(0.2):
                    return
                handler.wfile.write(b"slow words ")
                handler.wfile.flush()

        self.routes[path] = (200, {"Content-Type": "text/html"}, write)

    def __enter__(self) -> FakeWeb:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        web = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                path, _, query = self.path.partition("?")
                web.hits[path] = web.hits.get(path, 0) + 1
                web.queries.setdefault(path, []).append(unquote_plus(query))
                status, headers, body = web.routes.get(path, (404, {"Content-Type": "text/plain"}, b"no such page"))
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                if callable(body):
                    self.send_header("Connection", "close")
                    self.end_headers()
                    try:
                        body(self)
                    except ConnectionError:
                        pass
                    self.close_connection = True
                    return
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        return Handler


@functools.cache
def stacked_zeros(size: int, layers: int) -> bytes:
    """``size`` bytes of zeros (whole mebibytes) gzipped ``layers`` times, made in a fraction of a second:
    zlib's output for a fully flushed mebibyte of zeros is the same each time, so it is written once and
    repeated, and only the checksum goes over all the zeros."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)  # raw deflate, framed as gzip below
    mebibyte = bytes(1024 * 1024)
    block = squeeze.compress(mebibyte) + squeeze.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(size // len(mebibyte)):
        crc = zlib.crc32(mebibyte, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    last = b"\x03\x00"  # an empty final block
    body = header + block * (size // len(mebibyte)) + last + struct.pack("<II", crc, size & 0xFFFFFFFF)
    for _ in range(layers - 1):
        body = gzip.compress(body, compresslevel=9)
    return body


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        time.sleep(0.01)
