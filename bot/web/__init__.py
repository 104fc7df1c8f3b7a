"""The review web page: what the assistant did, why, and what it cost, in a browser.

A layer of its own over the store: it only reads (over a read-only connection), never imports a
channel, and the runner knows nothing of it; its one write is an answer to a question for consent,
put on the bus by :class:`Answers` as a channel would put a tap. :func:`review_page` opens the Starlette app;
:class:`ReviewServer` serves it.
"""

from bot.web.answers import Answers
from bot.web.app import build_app, review_page, review_token, routes
from bot.web.server import CannotListen, ReviewServer, review_url
from bot.web.sources import ReviewSources

__all__ = [
    "Answers",
    "CannotListen",
    "ReviewServer",
    "ReviewSources",
    "build_app",
    "review_page",
    "review_token",
    "review_url",
    "routes",
]
