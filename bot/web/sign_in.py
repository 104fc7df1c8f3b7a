"""Signing in with a link and signing out: the addresses open without a session (``bot.web.access``).

``/review`` in chat answers with a link to :data:`~bot.sign_in_links.SIGN_IN_PATH` carrying a code that
opens one session, once, for a few minutes (``bot.sign_in_links``); the link is then sent on to the page
without the code. Signing out ends the session and leads to a page that says how to sign in again.
"""

from __future__ import annotations

import logging

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from bot.sign_in_links import SIGN_IN_PATH
from bot.web.access import PageAccess, client_of
from bot.web.sessions import COOKIE, clear_cookie, set_cookie
from bot.web.sources import sources

__all__ = ["access_of", "signed_out", "with_link", "sign_out"]

log = logging.getLogger(__name__)


def access_of(request: Request) -> PageAccess:
    """The access state of the app serving ``request``."""
    found: PageAccess = request.app.state.access
    return found


async def with_link(request: Request) -> Response:
    """A sign-in link's code: a session and on to the page (303), once; otherwise 403 with one line."""
    access = access_of(request)
    # Checked however many wrong tokens came before: a link is signed, so a fresh one always opens.
    refused = access.redeem(request.query_params.get("code", ""))
    if refused is not None:
        access.throttle.failed(client_of(request.scope))
        log.warning("review page: a sign-in link was refused: %s", refused)
        return PlainTextResponse(f"403: {refused}; send /review to the bot for a new one.\n", status_code=403)
    log.info("review page: signed in with a link")
    cookie = set_cookie(access.sessions.start(), request.scope, access.root)
    return Response(status_code=303, headers={"location": access.root + "/", "set-cookie": cookie})


async def sign_out(request: Request) -> Response:
    """End the session the cookie names, make the browser forget it, and say how to sign in again."""
    access = access_of(request)
    session = request.cookies.get(COOKIE)
    if session:
        access.sessions.end(session)
    headers = {"location": f"{access.root}{SIGN_IN_PATH}/", "set-cookie": clear_cookie(request.scope, access.root)}
    return Response(status_code=303, headers=headers)


async def signed_out(request: Request) -> Response:
    """How to sign in (where signing out leads): nothing of the page."""
    return sources(request).renderer.page(request, "signed_out.html", {})
