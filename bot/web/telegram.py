"""The Mini App's door, open without a session. Telegram opens it with its signed init data in the URL
fragment; the door's script (``assets/miniapp.js``) posts that to :func:`sign_in`, which checks it
(``bot.web.init_data``) and starts a session.

Init data opens a session once: fresh (:data:`~bot.web.init_data.MAX_AGE`), never seen before (its hash
is kept until it would be too old anyway), and posted by the page itself (the ``Origin`` header, which
browsers send with every post, is the page's). Refusals count towards the throttle as a wrong token does.

The door shows nothing of the page: its page is a fixed shell and its assets are code, so a stranger who
finds the address learns only that it wants Telegram.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from bot.web.access import client_of
from bot.web.init_data import MAX_AGE, InitDataRefused, signed_user
from bot.web.sessions import set_cookie
from bot.web.sign_in import access_of
from bot.web.sources import sources

__all__ = ["ASSETS", "door", "sign_in"]

log = logging.getLogger(__name__)

ASSETS = Path(__file__).parent / "assets"
# Telegram's init data is well under 1 KB; a longer body is not init data.
MAX_BODY = 8 * 1024
NOT_A_MINI_APP = (
    "403: this review page is not set up as a Telegram Mini App "
    "(it needs VAULTBOT_REVIEW__PUBLIC_URL and the Telegram token).\n"
)
NOT_FROM_THE_PAGE = "403: Telegram's sign-in is taken only from the page itself.\n"


async def door(request: Request) -> Response:
    """The fixed shell whose script signs in with the init data in the address's fragment."""
    return sources(request).renderer.page(request, "door.html", {})


async def sign_in(request: Request) -> Response:
    """The body is Telegram's init data (``tgWebAppData``): valid, fresh, first seen, an allowlisted
    user's and posted by the page, it is answered 204 with a session; otherwise 401, 403 or 429 with
    one line saying why."""
    settings = sources(request).settings
    access = access_of(request)
    bot_token = settings.telegram.token
    if settings.review.public_url is None or bot_token is None:
        return PlainTextResponse(NOT_A_MINI_APP, status_code=403)
    if not access.own_origin(request.scope, request.headers.get("origin", "")):
        return PlainTextResponse(NOT_FROM_THE_PAGE, status_code=403)
    body = await _body(request)
    if body is None:
        return PlainTextResponse("413: that is too long to be Telegram's init data.\n", status_code=413)
    try:  # checked however many wrong tokens came before: init data is signed by Telegram
        signed = signed_user(
            body,
            bot_token=bot_token.get_secret_value(),
            allowed=settings.telegram.allowed_users,
            now=datetime.fromtimestamp(access.clock(), UTC),
        )
        # What was used is forgotten when the page restarts: init data signed before then is not taken.
        if signed.signed_at.timestamp() < int(access.started):
            raise InitDataRefused(403, "this init data was signed before the page started: open it from Telegram again")
        if not access.used.first(f"init:{signed.hash}", (signed.signed_at + MAX_AGE).timestamp()):
            raise InitDataRefused(403, "this init data has signed in already: open the page from Telegram again")
    except InitDataRefused as refused:
        access.throttle.failed(client_of(request.scope))
        log.warning("review page: Telegram sign-in refused: %s", refused)
        return PlainTextResponse(f"{refused.status}: {refused}.\n", status_code=refused.status)
    log.info("review page: Telegram user %s signed in", signed.user)
    cookie = set_cookie(access.sessions.start(), request.scope, access.root)
    return Response(status_code=204, headers={"set-cookie": cookie})


async def _body(request: Request) -> str | None:
    """The request's body as text, or None past :data:`MAX_BODY` bytes (read no further)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            return None
    return body.decode("utf-8", errors="replace")
