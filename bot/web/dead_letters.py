"""Dead letters waiting for a retry: each message the model could not answer, where it was filed, and
the ``vaultbot retry`` command that sends it again. Read-only, like every page."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from bot.store import retry_command
from bot.web.sources import sources


async def dead_letter_list(request: Request) -> Response:
    """The dead letters not yet sent again, newest first."""
    review = sources(request)
    rows = await review.reader.waiting_dead_letters()
    letters = [{**row, "retry": retry_command(row["run_id"])} for row in rows]
    return review.renderer.page(request, "dead_letters.html", {"dead_letters": letters})
