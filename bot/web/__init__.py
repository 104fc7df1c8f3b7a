"""The review web page: what the assistant did, why, and what it cost, in a browser.

A layer of its own over the store: it only reads (over a read-only connection), never imports a
channel, and the runner knows nothing of it. :func:`review_page` opens the Starlette app;
:class:`ReviewServer` serves it.
"""

from bot.web.app import build_app, review_page, review_token, routes
from bot.web.server import CannotListen, ReviewServer, review_url
from bot.web.sources import ReviewSources

__all__ = [
    "CannotListen",
    "ReviewServer",
    "ReviewSources",
    "build_app",
    "review_page",
    "review_token",
    "review_url",
    "routes",
]
