"""The review page's Starlette app: the route table, the gate, and opening the page over a
read-only connection to the store."""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import tzinfo
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from bot.db import Database, ReadOnlyDatabase
from bot.settings import MINI_APP_PATH, Settings
from bot.sign_in_links import SIGN_IN_PATH
from bot.store import Store, StoreReader
from bot.web import dead_letters, files, health, notes, questions, runs, sign_in, telegram, timeline, usage
from bot.web.access import SIGN_OUT_PATH, PageAccess, TokenGate
from bot.web.render import Renderer
from bot.web.sources import AnswerBox, ReviewSources

__all__ = ["build_app", "review_page", "review_token", "routes"]

STATIC = Path(__file__).parent / "static"


def routes() -> list[BaseRoute]:
    """Every address the page answers."""
    door = MINI_APP_PATH.removeprefix(SIGN_IN_PATH)
    return [
        Route("/", timeline.timeline),
        Route("/runs", runs.run_list),
        Route("/runs/{run_id}", runs.run_page),
        Route("/questions/{question_id}", questions.answer, methods=["POST"]),
        Route("/notes", notes.note_list),
        Route("/notes/{path:path}", notes.note_page),
        Route("/usage", usage.usage_page),
        Route("/health", health.health_page),
        Route("/dead-letters", dead_letters.dead_letter_list),
        Route("/vault/{path:path}", files.vault_image),
        Route("/favicon.ico", favicon),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        Route(SIGN_OUT_PATH, sign_in.sign_out, methods=["POST"]),
        # Open without a session: signing in with a link or with Telegram, which show nothing of the page.
        Route(SIGN_IN_PATH, sign_in.with_link),
        Mount(
            SIGN_IN_PATH,
            routes=[
                Route("/", sign_in.signed_out),
                Route(door, telegram.door),
                Route(door, telegram.sign_in, methods=["POST"]),
                Mount("/assets", StaticFiles(directory=telegram.ASSETS), name="assets"),
            ],
        ),
    ]


async def favicon(request: Request) -> Response:
    """The icon browsers ask for at the root (the pages name theirs under /static)."""
    return FileResponse(STATIC / "favicon.ico", media_type="image/x-icon")


def build_app(
    sources: ReviewSources, token: str, *, listen: str = "127.0.0.1", clock: Callable[[], float] = time.time
) -> Starlette:
    """The review page; every address but signing in needs ``token`` or a session. ``listen`` is the
    address it is served on (its name is one it answers to); ``clock`` (seconds since the epoch)
    times sessions, sign-in links and the throttle."""
    access = PageAccess(token, sources.settings.review, listen=listen, clock=clock)
    app = Starlette(routes=routes(), middleware=[Middleware(TokenGate, access=access)])
    app.state.review = sources
    app.state.access = access
    return app


async def review_token(settings: Settings, db: Database) -> str:
    """The page's token: ``VAULTBOT_REVIEW__TOKEN``, else the one kept in the store (generated and
    kept on first use, hence the writable ``db``)."""
    configured = settings.review.token
    if configured is not None:
        return configured.get_secret_value()
    return await Store(db).review_token(secrets.token_urlsafe(24))


@asynccontextmanager
async def review_page(
    settings: Settings,
    token: str,
    *,
    tz: tzinfo | None = None,
    listen: str | None = None,
    clock: Callable[[], float] = time.time,
    answers: AnswerBox | None = None,
) -> AsyncIterator[Starlette]:
    """The page over a read-only connection of its own to the store (which must exist), open while
    the block runs. Times are shown in ``tz`` (default: the user's zone); ``listen`` is the address it
    is served on (default: ``VAULTBOT_REVIEW__HOST``); with ``answers`` it can answer questions."""
    db = await ReadOnlyDatabase.open(settings.store.path)
    try:
        sources = ReviewSources(StoreReader(db), settings, Renderer(tz or settings.zone), answers)
        yield build_app(sources, token, listen=settings.review.host if listen is None else listen, clock=clock)
    finally:
        await db.close()
