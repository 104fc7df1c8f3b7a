"""The HTTP server under the fake APIs: threaded, on 127.0.0.1, quiet about clients that hang up."""

from __future__ import annotations

import sys
from http.server import ThreadingHTTPServer
from typing import Any


class LocalServer(ThreadingHTTPServer):
    """A client killed mid-request (the SIGKILL tests) is expected, not an error worth a traceback."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)
