"""Who may see the page: every request carries the access token, in the URL the first time and in
a cookie after that (as Jupyter does), or the cookie set by signing in with Telegram's init data at
the Mini App's door (``bot.web.telegram``), the one address open without it. Every response
carries a strict Content-Security-Policy.

Without the token a request is answered 401 (none given) or 403 (a wrong one), never redirected.

The cookie is HttpOnly and ``SameSite=Strict``: in Telegram's in-app browser the page is the
top-level document and every request after signing in (the links, the door's own post) goes to
the page's own origin, so a strict cookie always travels; no other site ever needs to send it.
It is ``Secure`` on a request that arrived over https (the reverse proxy says so with
``X-Forwarded-Proto``, which uvicorn honours from 127.0.0.1), so behind the public address it
never travels in clear, while the token URL on http://127.0.0.1 keeps working.
"""

from __future__ import annotations

import hashlib
import hmac
from http.cookies import SimpleCookie

from starlette.datastructures import MutableHeaders
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bot.settings import MINI_APP_PATH

__all__ = ["COOKIE", "DOOR", "SECURITY_HEADERS", "Session", "TokenGate"]

COOKIE = "vaultbot_review"
# Where the Mini App signs in: open without the token, it shows nothing of the page (bot.web.telegram).
DOOR = MINI_APP_PATH.rstrip("/")
# Scripts, styles and images only from this server (nothing inline); requests and forms only to it.
CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
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


class Session:
    """The page's session cookie: a value derived from the token (never the token itself), set by
    the token URL and by signing in with Telegram alike."""

    def __init__(self, token: str) -> None:
        self.token = token.encode()
        self._value = hmac.new(self.token, b"vaultbot review cookie", hashlib.sha256).hexdigest().encode()

    def admits_token(self, given: str) -> bool:
        """``given`` is the page's token (compared in constant time)."""
        return hmac.compare_digest(given.encode(), self.token)

    def admits_cookie(self, given: str) -> bool:
        """``given`` is the session cookie's value (compared in constant time)."""
        return hmac.compare_digest(given.encode(), self._value)

    def set_cookie(self, scope: Scope) -> str:
        """The ``Set-Cookie`` value for a response to the request of ``scope``."""
        jar: SimpleCookie = SimpleCookie()
        jar[COOKIE] = self._value.decode()
        jar[COOKIE].update({"httponly": True, "samesite": "Strict", "path": "/", "secure": scope["scheme"] == "https"})
        return jar.output(header="").strip()


class TokenGate:
    """ASGI middleware: admits requests with the token or the session cookie (and any to the door),
    and adds the security headers."""

    def __init__(self, app: ASGIApp, session: Session) -> None:
        self._app = app
        self._session = session

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        conn = HTTPConnection(scope)
        given = conn.query_params.get("token")
        cookie = conn.cookies.get(COOKIE)
        set_cookie = False
        if _at_door(scope["path"]):
            pass  # the door's own views decide (bot.web.telegram)
        elif given is not None:
            if not self._session.admits_token(given):
                await self._refuse(403, BAD_TOKEN, scope, receive, send)
                return
            set_cookie = True
        elif cookie is None:
            await self._refuse(401, NO_TOKEN, scope, receive, send)
            return
        elif not self._session.admits_cookie(cookie):
            await self._refuse(403, BAD_TOKEN, scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                _secure(headers)
                if set_cookie:
                    headers.append("set-cookie", self._session.set_cookie(scope))
            await send(message)

        await self._app(scope, receive, send_secured)

    @staticmethod
    async def _refuse(status: int, text: str, scope: Scope, receive: Receive, send: Send) -> None:
        response = PlainTextResponse(text, status_code=status)
        _secure(response.headers)
        await response(scope, receive, send)


def _at_door(path: str) -> bool:
    return path == DOOR or path.startswith(DOOR + "/")


def _secure(headers: MutableHeaders) -> None:
    for name, value in SECURITY_HEADERS.items():
        headers[name] = value
