"""Who may see the page, and what every answer carries. For every request, in order:

1. **Host.** The page answers at 127.0.0.1, [::1], localhost, the address it listens on and the public
   address's host, and refuses any other name 403: a site whose name its owner points at 127.0.0.1 (DNS
   rebinding) gets nothing. Listening on every address (0.0.0.0, ::) it also answers at any IP address,
   which, unlike a name, cannot be pointed elsewhere.
2. **Path.** Behind a public address with a path (``https://host/review``) a request arrives with the
   path (a proxy that passes it on) or without it (one that strips it); the page routes either, and its
   links and redirects carry the path (``root_path``).
3. **Origin.** A request other than GET or HEAD that names another origin is refused 403.
4. **Open addresses.** Signing in and out (``bot.web.sign_in``, ``bot.web.telegram``) show nothing of
   the page and need no session.
5. **Everything else** needs the token (in the query) or a session cookie (``bot.web.sessions``):
   without either it is answered 401, with a wrong one 403, never redirected. The right token starts a
   session, and a browser's visit is then sent on (303) to the same address without the token, so it
   leaves the address bar; a script's request is answered at once. Wrong tokens are slowed down
   (``bot.web.limits``): 429 while the page waits.

Every answer carries the security headers, refusals included. The pages opened at the public address,
which Telegram shows as a Mini App, may be framed by Telegram Web (https://web.telegram.org), and by no
other site; no other page may be framed at all.
"""

from __future__ import annotations

import hmac
import html
import ipaddress
import re
import time
from collections.abc import Callable
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from starlette.datastructures import Headers, MutableHeaders
from starlette.requests import HTTPConnection
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bot.settings import ReviewSettings
from bot.sign_in_links import LINK_SECONDS, SIGN_IN_PATH, read_code
from bot.web.limits import Once, Throttle
from bot.web.sessions import COOKIE, Sessions, set_cookie

__all__ = ["PageAccess", "TokenGate", "security_headers"]

TELEGRAM_WEB = "https://web.telegram.org"
# Scripts, styles and images only from this server (nothing inline); requests and forms only to it.
CSP = (
    "default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; base-uri 'none'"
)
NO_FRAMES = "'none'"
LOOPBACK_NAMES = frozenset({"127.0.0.1", "::1", "localhost"})
WILDCARDS = frozenset({"0.0.0.0", "::", ""})
# The addresses open without a session: signing in (a link, Telegram) and out.
SIGN_OUT_PATH = "/sign-out"
NO_TOKEN = "401: this page needs its access token; open the address `vaultbot review` printed.\n"
BAD_TOKEN = "403: that access token is not this page's; open the address `vaultbot review` printed.\n"
ENDED = (
    "403: this session has ended (signed out, 12 hours old, or the page restarted); open the address "
    "`vaultbot review` printed, or send /review to the bot.\n"
)
WRONG_HOST = "403: this page answers only at 127.0.0.1, localhost and its own addresses, not at this host name.\n"
CROSS_ORIGIN = "403: this page takes posts only from its own pages.\n"
SLOW_DOWN = "429: too many wrong attempts to sign in; try again in {seconds} s.\n"


def security_headers(framed: bool) -> dict[str, str]:
    """The headers every answer carries; ``framed``: Telegram Web may show it in a frame."""
    headers = {
        "content-security-policy": f"{CSP}; frame-ancestors {TELEGRAM_WEB if framed else NO_FRAMES}",
        "x-content-type-options": "nosniff",
        # The address may carry the token or a sign-in code: never send it on to another site. (Not
        # no-referrer: with it a browser posts the page's own forms with "Origin: null".)
        "referrer-policy": "same-origin",
        "cache-control": "no-store",
        # No other site may load the page's images or scripts, with the session's cookie or without.
        "cross-origin-resource-policy": "same-origin",
    }
    if not framed:
        headers["x-frame-options"] = "DENY"
    return headers


def host_name(header: str) -> str:
    """The name in a ``Host`` header, lower case, without the port or an IPv6 address's brackets."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:].partition("]")[0]
    name, _, port = header.rpartition(":")
    return name if name and port.isdigit() else header


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class PageAccess:
    """What the gate and the sign-in views share: the token, the sessions, the throttle, the codes and
    init data already used, and where the page is. ``clock`` is seconds since the epoch."""

    def __init__(
        self, token: str, review: ReviewSettings, *, listen: str, clock: Callable[[], float] = time.time
    ) -> None:
        self.token = token
        self.clock = clock
        self.root = review.public_path
        public = urlsplit(review.public_url) if review.public_url else None
        self.public_host = public.hostname if public else None
        self.public_origin = f"https://{public.netloc.lower()}" if public else None
        named = {listen.lower()} - WILDCARDS
        if self.public_host:
            named.add(self.public_host)
        self._hosts = LOOPBACK_NAMES | named
        self._any_ip = listen in WILDCARDS
        self.sessions = Sessions(clock)
        self.throttle = Throttle(clock)
        self.used = Once(clock)
        self._started_ms = int(clock() * 1000)

    @property
    def started(self) -> float:
        """When the page started (seconds since the epoch): what was signed before is not taken."""
        return self._started_ms / 1000

    def serves(self, host: str) -> bool:
        """The page answers requests addressed to ``host``."""
        return host in self._hosts or (self._any_ip and _is_ip(host))

    def framed(self, host: str) -> bool:
        """Pages addressed to ``host`` are the Mini App's, which Telegram Web may frame."""
        return self.public_host is not None and host == self.public_host

    def admits_token(self, given: str) -> bool:
        """``given`` is the page's token (compared in constant time)."""
        return hmac.compare_digest(given.encode(), self.token.encode())

    def own_origin(self, scope: Scope, origin: str) -> bool:
        """``origin`` (an ``Origin`` header) is the page's: the request's own scheme and host, or the
        public address (a proxy may pass the request on with another ``Host``)."""
        host = Headers(scope=scope).get("host", "").lower()
        return origin.lower() in {f"{scope['scheme']}://{host}", self.public_origin}

    def redeem(self, code: str) -> str | None:
        """Sign in with a link's ``code``: None when it opens a session (it never will again), else why not."""
        try:
            link = read_code(self.token, code)
        except ValueError:
            return "that is not a sign-in link of this page"
        now_ms = self.clock() * 1000
        if link.made_ms < self._started_ms or link.made_ms > now_ms + 1000:
            return "that sign-in link is not one of this page's (it was made before the page started)"
        if now_ms - link.made_ms > LINK_SECONDS * 1000:
            return f"that sign-in link has expired (a link lasts {LINK_SECONDS // 60} minutes)"
        if not self.used.first(f"link:{link.nonce}", link.made_ms / 1000 + LINK_SECONDS):
            return "that sign-in link has been used already"
        return None

    def route(self, scope: Scope) -> Scope:
        """``scope`` with the public path as its ``root_path`` and in its ``path``, whether the proxy
        passed it on or stripped it."""
        root = self.root
        if not root:
            return scope
        path = scope["path"]
        if path == root:
            path = root + "/"
        elif not path.startswith(root + "/"):
            path = root + path
        return {**scope, "root_path": root, "path": path, "raw_path": quote(path).encode()}

    def route_path(self, scope: Scope) -> str:
        """The page's own address of a routed ``scope`` (its path without the public one)."""
        return scope["path"][len(self.root) :]


def is_open(path: str) -> bool:
    """``path`` (the page's own address) is one of signing in or out."""
    return path in (SIGN_IN_PATH, SIGN_OUT_PATH) or path.startswith(SIGN_IN_PATH + "/")


class TokenGate:
    """ASGI middleware: the checks above, and the security headers on every answer."""

    def __init__(self, app: ASGIApp, access: PageAccess) -> None:
        self._app = app
        self._access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        access = self._access
        host = host_name(Headers(scope=scope).get("host", ""))
        framed = access.framed(host)
        if access.serves(host):
            scope = access.route(scope)
            refused, cookie = self._check(scope)
        else:
            refused, cookie = PlainTextResponse(WRONG_HOST, status_code=403), None
        if refused is not None:
            _secure(refused.headers, framed)
            await refused(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                _secure(headers, framed)
                if cookie is not None:
                    headers.append("set-cookie", cookie)
            await send(message)

        await self._app(scope, receive, send_secured)

    def _check(self, scope: Scope) -> tuple[Response | None, str | None]:
        """A refusal (or the redirect that takes the token out of the address), else None and the
        ``Set-Cookie`` value of a session the token started, if it did."""
        access = self._access
        conn = HTTPConnection(scope)
        origin = conn.headers.get("origin")
        if scope["method"] not in ("GET", "HEAD") and origin is not None and not access.own_origin(scope, origin):
            return PlainTextResponse(CROSS_ORIGIN, status_code=403), None
        if is_open(access.route_path(scope)):
            return None, None
        given = conn.query_params.get("token")
        if given is not None:
            wait = access.throttle.wait(client_of(scope))
            if wait:
                return slow_down(wait), None
            if not access.admits_token(given):
                access.throttle.failed(client_of(scope))
                return refused(BAD_TOKEN, 403, scope, access.root), None
            cookie = set_cookie(access.sessions.start(), scope, access.root)
            if scope["method"] == "GET" and conn.headers.get("sec-fetch-mode") == "navigate":
                headers = {"location": _without_token(scope), "set-cookie": cookie}
                return Response(status_code=303, headers=headers), None
            return None, cookie
        session = conn.cookies.get(COOKIE)
        if not session:
            return refused(NO_TOKEN, 401, scope, access.root), None
        if not access.sessions.admits(session):
            return refused(ENDED, 403, scope, access.root), None
        return None, None


_REFUSED_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{title} · vaultbot</title>
<link rel="stylesheet" href="{root}/sign-in/assets/door.css">
</head>
<body>
<main id="door">
<h1>vaultbot review</h1>
<p role="alert"><strong>{title}.</strong> {reason}</p>
</main>
</body>
</html>
"""
_TITLES = {401: "Not signed in", 403: "Not allowed"}


def refused(line: str, status: int, scope: Scope, root: str) -> Response:
    """A refusal: one line of plain text, or for a browser opening the page (a navigation) the same
    words on a page of the review page's own look, saying what to do."""
    if Headers(scope=scope).get("sec-fetch-mode") != "navigate":
        return PlainTextResponse(line, status_code=status)
    reason = html.escape(line.split(": ", 1)[1].strip())
    reason = re.sub(r"`([^`]+)`", r"<code>\1</code>", reason[0].upper() + reason[1:])
    page = _REFUSED_PAGE.format(title=_TITLES[status], reason=reason, root=html.escape(root))
    return HTMLResponse(page, status_code=status)


def client_of(scope: Scope) -> str:
    """The address a request came from, which the throttle counts failures by."""
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


def slow_down(wait: int) -> Response:
    """The answer to an attempt to sign in while the throttle holds them back."""
    return PlainTextResponse(SLOW_DOWN.format(seconds=wait), status_code=429, headers={"retry-after": str(wait)})


def _without_token(scope: Scope) -> str:
    query = parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True)
    kept = [(k, v) for k, v in query if k != "token"]
    return quote(scope["path"]) + (f"?{urlencode(kept)}" if kept else "")


def _secure(headers: MutableHeaders, framed: bool) -> None:
    for name, value in security_headers(framed).items():
        headers[name] = value
