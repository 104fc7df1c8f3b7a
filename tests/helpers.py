"""Small readers over the real database, shared by the tests that check what a user would see."""

from __future__ import annotations

from bot.app import App
from bot.bus import OutboundMessage


async def outbox(app: App) -> list[OutboundMessage]:
    """Every outbound message queued so far, in order."""
    rows = await app.db.fetchall("SELECT payload FROM bus_messages WHERE topic LIKE 'outbound%' ORDER BY id")
    return [OutboundMessage.model_validate_json(row["payload"]) for row in rows]


async def run_inbox(app: App) -> None:
    """Let the runner worker handle everything on the inbound topic, then return."""
    await app.runner_worker().run(burst=True)
