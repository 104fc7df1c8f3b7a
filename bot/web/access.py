"""Who may see the page: every request carries the access token, in the URL the first time and in
a cookie after that (as Jupyter does). Every response carries a strict Content-Security-Policy.

Without the token a request is answered 401 (none given) or 403 (a wrong one), never redirected.
"""

from __future__ import annotations

import hashlib
import hmac
from http.cookies import SimpleCookie

from starlette.datastructures import MutableHeaders
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["COOKIE", "SECURITY_HEADERS", "TokenGate"]

COOKIE = "vaultbot_review"
# No script runs at all; styles and images only from this server; forms post only here.
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    # The address carries the token: never send it on to another site.
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
NO_TOKEN = "401: this page needs its access token; open the address `vaultbot review` printed.\n"
BAD_TOKEN = "403: that access token is not this page's; open the address `vaultbot review` printed.\n"


class TokenGate:
    """ASGI middleware: admits requests with the token and adds the security headers."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._token = token.encode()
        # The cookie holds a value derived from the token, not the token itself.
        self._cookie = hmac.new(self._token, b"vaultbot review cookie", hashlib.sha256).hexdigest().encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        given = conn.query_params.get("token")
        cookie = conn.cookies.get(COOKIE)
        if given is not None:
            admitted, set_cookie = hmac.compare_digest(given.encode(), self._token), True
        elif cookie is not None:
            admitted, set_cookie = hmac.compare_digest(cookie.encode(), self._cookie), False
        else:
            await self._refuse(401, NO_TOKEN, scope, receive, send)
            return
        if not admitted:
            await self._refuse(403, BAD_TOKEN, scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                _secure(headers)
                if set_cookie:
                    headers.append("set-cookie", self._set_cookie())
            await send(message)

        await self._app(scope, receive, send_secured)

    def _set_cookie(self) -> str:
        jar: SimpleCookie = SimpleCookie()
        jar[COOKIE] = self._cookie.decode()
        jar[COOKIE].update({"httponly": True, "samesite": "Strict", "path": "/"})
        return jar.output(header="").strip()

    @staticmethod
    async def _refuse(status: int, text: str, scope: Scope, receive: Receive, send: Send) -> None:
        response = PlainTextResponse(text, status_code=status)
        _secure(response.headers)
        await response(scope, receive, send)


def _secure(headers: MutableHeaders) -> None:
    for name, value in SECURITY_HEADERS.items():
        headers[name] = value
