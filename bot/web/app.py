"""The review page's Starlette app: the route table, the token gate, and opening the page over a
read-only connection to the store."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import tzinfo
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from bot.db import Database, ReadOnlyDatabase
from bot.settings import Settings
from bot.store import Store, StoreReader
from bot.web import dead_letters, files, health, notes, runs, telegram, timeline, usage
from bot.web.access import DOOR, Session, TokenGate
from bot.web.render import Renderer
from bot.web.sources import ReviewSources

__all__ = ["build_app", "review_page", "review_token", "routes"]

STATIC = Path(__file__).parent / "static"


def routes() -> list[BaseRoute]:
    """Every address the page answers."""
    return [
        Route("/", timeline.timeline),
        Route("/runs", runs.run_list),
        Route("/runs/{run_id}", runs.run_page),
        Route("/notes", notes.note_list),
        Route("/notes/{path:path}", notes.note_page),
        Route("/usage", usage.usage_page),
        Route("/health", health.health_page),
        Route("/dead-letters", dead_letters.dead_letter_list),
        Route("/vault/{path:path}", files.vault_image),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        # The one address open without the token: the Mini App signs in here, and it shows nothing else.
        Mount(
            DOOR,
            routes=[
                Route("/", telegram.door),
                Route("/session", telegram.sign_in, methods=["POST"]),
                Mount("/assets", StaticFiles(directory=telegram.ASSETS), name="assets"),
            ],
        ),
    ]


def build_app(sources: ReviewSources, token: str) -> Starlette:
    """The review page; every request needs ``token`` (or the cookie it, or Telegram's init data at
    the door, sets)."""
    session = Session(token)
    app = Starlette(routes=routes(), middleware=[Middleware(TokenGate, session=session)])
    app.state.review = sources
    app.state.session = session
    return app


async def review_token(settings: Settings, db: Database) -> str:
    """The page's token: ``VAULTBOT_REVIEW__TOKEN``, else the one kept in the store (generated and
    kept on first use, hence the writable ``db``)."""
    configured = settings.review.token
    if configured is not None:
        return configured.get_secret_value()
    return await Store(db).review_token(secrets.token_urlsafe(24))


@asynccontextmanager
async def review_page(settings: Settings, token: str, *, tz: tzinfo | None = None) -> AsyncIterator[Starlette]:
    """The page over a read-only connection of its own to the store (which must exist), open while
    the block runs. Times are shown in ``tz`` (default: the user's zone)."""
    db = await ReadOnlyDatabase.open(settings.store.path)
    try:
        yield build_app(ReviewSources(StoreReader(db), settings, Renderer(tz or settings.zone)), token)
    finally:
        await db.close()
