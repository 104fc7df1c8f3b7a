"""What the review page's views read from, and how a view finds it: the one module both the app
and the views import, so imports go one way (app → views → sources)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

from starlette.requests import Request

from bot.settings import Settings
from bot.store import StoreReader
from bot.web.render import Renderer

__all__ = ["AnswerBox", "ReviewSources", "sources"]


class AnswerBox(Protocol):
    """The page's one write (``bot.web.answers.Answers``): the person's answer to a waiting question."""

    async def answer(self, question: dict[str, Any], choice: Literal["allow", "deny"]) -> None:
        """Hand ``choice`` for ``question`` (as ``StoreReader.question`` reads it) to the runner."""
        ...


@dataclass(frozen=True)
class ReviewSources:
    """What the views read: the store's read-only questions (over a read-only connection), the
    settings of the process serving the page (the vault's path, the user's zone), the renderer; and
    the one narrow writer, of answers to questions for consent, when the page runs with the bot."""

    reader: StoreReader
    settings: Settings
    renderer: Renderer
    # The page's one write, answering a waiting question (``bot.web.answers``); None where it cannot.
    answers: AnswerBox | None = None


def sources(request: Request) -> ReviewSources:
    """The sources of the app serving ``request``."""
    found: ReviewSources = request.app.state.review
    return found
