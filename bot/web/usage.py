"""Usage: tokens per day and model as a chart over the last 30 days (placeholder until the usage store lands)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from bot.web import app as web


async def usage_page(request: Request) -> Response:
    """Tokens per day and per model."""
    review = web.sources(request)
    return review.renderer.page(request, "usage.html", {"rows": []})
