"""The review web page: what the assistant did, why, and what it cost, in a browser.

A layer of its own over the store: it only reads, never imports a channel, and the runner knows
nothing of it. :func:`build_app` makes the Starlette app; :class:`ReviewServer` serves it.
"""

from bot.web.app import ReviewSources, build_app, review_app
from bot.web.server import CannotListen, ReviewServer, review_url

__all__ = ["CannotListen", "ReviewServer", "ReviewSources", "build_app", "review_app", "review_url"]
