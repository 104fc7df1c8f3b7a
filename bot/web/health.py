"""Health: what ``vaultbot doctor`` knows without touching anything, and the dead letters."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from bot.clock import Clock
from bot.doctor import configured
from bot.web import app as web


async def health_page(request: Request) -> Response:
    """Channels, model, messages waiting and dead-lettered, each dead letter with its error."""
    review = web.sources(request)
    counts = await review.bus.counts()
    dead = [_dead_letter(row) for row in await review.bus.dead_letters(limit=100)]
    checks = configured(review.settings, Clock(review.settings.zone))
    data = {
        "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in checks],
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
    return {
        "id": row["id"],
        "topic": row["topic"],
        "conversation": row["conversation"],
        "attempts": row["attempts"],
        "error": row["last_error"],
        "when": row["updated_at"],
        "text": text,
    }
