"""The Mini App's door: the one address open without the token. Telegram opens it with its signed
init data in the URL fragment; the door's script (``assets/miniapp.js``) posts that to
:func:`sign_in`, which checks it (``bot.web.init_data``) and sets the page's session cookie.

The door shows nothing of the page: its page is a fixed shell and its assets are code, so a
stranger who finds the address learns only that it wants Telegram.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from bot.web.access import Session
from bot.web.init_data import InitDataRefused, signed_user
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


async def door(request: Request) -> Response:
    """The fixed shell whose script signs in with the init data in the address's fragment."""
    return sources(request).renderer.page(request, "door.html", {})


async def sign_in(request: Request) -> Response:
    """The body is Telegram's init data (``tgWebAppData``): valid, fresh and an allowlisted user's, it
    is answered 204 with the session cookie; otherwise 401 or 403 with one line saying why."""
    settings = sources(request).settings
    bot_token = settings.telegram.token
    if settings.review.public_url is None or bot_token is None:
        return PlainTextResponse(NOT_A_MINI_APP, status_code=403)
    body = await _body(request)
    if body is None:
        return PlainTextResponse("413: that is too long to be Telegram's init data.\n", status_code=413)
    try:
        user = signed_user(
            body,
            bot_token=bot_token.get_secret_value(),
            allowed=settings.telegram.allowed_users,
            now=datetime.now(UTC),
        )
    except InitDataRefused as refused:
        log.warning("review page: Telegram sign-in refused: %s", refused)
        return PlainTextResponse(f"{refused.status}: {refused}.\n", status_code=refused.status)
    log.info("review page: Telegram user %s signed in", user)
    session: Session = request.app.state.session
    return Response(status_code=204, headers={"set-cookie": session.set_cookie(request.scope)})


async def _body(request: Request) -> str | None:
    """The request's body as text, or None past :data:`MAX_BODY` bytes (read no further)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            return None
    return body.decode("utf-8", errors="replace")
