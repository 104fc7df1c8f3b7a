"""The HTTP server under the fake APIs: threaded, on 127.0.0.1, quiet about clients that hang up."""

from __future__ import annotations

import socket
import sys
from http.server import ThreadingHTTPServer
from typing import Any


class LocalServer(ThreadingHTTPServer):
    """Quiet about a client killed mid-request (the SIGKILL tests): expected, not worth a traceback."""

    daemon_threads = True

    def get_request(self) -> tuple[socket.socket, Any]:
        # http.server writes headers and body separately; with Nagle's algorithm on, each answer
        # would wait ~40 ms for a delayed ACK, which is the fake's cost, not the code under test.
        conn, address = super().get_request()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)
