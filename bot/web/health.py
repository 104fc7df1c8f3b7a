"""Health: the configuration the bot runs with (as it recorded it on start), the queue, and the
dead letters, each with the command that runs it again."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from bot.store import retry_command
from bot.web.sources import sources


async def health_page(request: Request) -> Response:
    """The bot's configuration, messages waiting and dead-lettered, each dead letter with its error."""
    review = sources(request)
    counts = await review.reader.message_counts()
    dead = [_dead_letter(row) for row in await review.reader.dead_letters(limit=100)]
    recorded = await review.reader.bot_config()
    data = {
        "bot": None if recorded is None else {"config": recorded[0], "recorded_at": recorded[1]},
        "waiting": counts.get("pending", 0) + counts.get("leased", 0),
        "dead_count": counts.get("dead", 0),
        "done": counts.get("done", 0),
        "dead_letters": dead,
    }
    return review.renderer.page(request, "health.html", data)


def _dead_letter(row: dict[str, Any]) -> dict[str, Any]:
    try:
        payload = json.loads(row["payload"])
    except ValueError:
        payload = {}
    text = payload.get("text") if isinstance(payload, dict) else None
    retry = retry_command(row["retry_id"]) if row["retry_id"] else None
    return {
        "id": row["id"],
        "topic": row["topic"],
        "conversation": row["conversation"],
        "attempts": row["attempts"],
        "error": row["last_error"],
        "when": row["updated_at"],
        "text": text,
        "retry": retry,
    }
