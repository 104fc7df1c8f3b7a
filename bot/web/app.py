"""The review page's Starlette app: the route table, the token gate and where views read from."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from bot.bus import Bus
from bot.db import Database
from bot.settings import Settings
from bot.store import Store, StoreReader
from bot.web import dead_letters, health, notes, runs, timeline, usage
from bot.web.access import TokenGate
from bot.web.render import Renderer

__all__ = ["ReviewSources", "build_app", "review_app", "sources"]


@dataclass(frozen=True)
class ReviewSources:
    """What the views read: the store (through its read-only questions), the bus (counts and dead
    letters only), the settings."""

    reader: StoreReader
    store: Store
    bus: Bus
    settings: Settings
    renderer: Renderer


def build_app(sources: ReviewSources, token: str) -> Starlette:
    """The review page; every request needs ``token``."""
    routes = [
        Route("/", timeline.timeline),
        Route("/runs", runs.run_list),
        Route("/runs/{run_id}", runs.run_page),
        Route("/notes", notes.note_list),
        Route("/notes/{path:path}", notes.note_page),
        Route("/usage", usage.usage_page),
        Route("/health", health.health_page),
        Route("/dead-letters", dead_letters.dead_letter_list),
        Mount("/static", StaticFiles(directory=Path(__file__).parent / "static"), name="static"),
    ]
    app = Starlette(routes=routes, middleware=[Middleware(TokenGate, token=token)])
    app.state.review = sources
    return app


async def review_app(settings: Settings, db: Database, *, tz: tzinfo | None = None) -> tuple[Starlette, str]:
    """The page over ``db`` with its token: ``VAULTBOT_REVIEW__TOKEN``, else the one kept in the
    store (generated on first use). Times are shown in ``tz`` (default: the user's zone)."""
    configured = settings.review.token
    if configured is not None:
        token = configured.get_secret_value()
    else:
        token = await Store(db).review_token(secrets.token_urlsafe(24))
    review = ReviewSources(StoreReader(db), Store(db), Bus(db), settings, Renderer(tz or settings.zone))
    return build_app(review, token), token


def sources(request: Request) -> ReviewSources:
    """The sources of the app serving ``request``."""
    found: ReviewSources = request.app.state.review
    return found
