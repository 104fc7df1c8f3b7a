"""Helpers shared by the tests: readers over the real database, a step recorder, and the
environment for a `vaultbot` subprocess."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bot.app import App
from bot.bus import OutboundMessage

ROOT = Path(__file__).resolve().parents[1]
# Variables from the developer's shell that must never reach a test.
OWN_PREFIXES = ("VAULTBOT_", "ANTHROPIC_")


def subprocess_env(**variables: str) -> dict[str, str]:
    """The environment for a `vaultbot` subprocess: this checkout importable, none of the
    developer's vaultbot or Anthropic settings, plus ``variables``."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(OWN_PREFIXES)}
    return {**clean, "PYTHONPATH": str(ROOT), **variables}


class Steps:
    """A step recorder that keeps what the loop records, for assertions."""

    def __init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.events: list[tuple[str, dict[str, Any], str | None]] = []

    async def step(self, **fields: Any) -> None:
        self.steps.append(fields)

    async def event(self, type: str, data: dict[str, Any], *, notice: str | None = None) -> None:
        self.events.append((type, data, notice))


async def outbox(app: App) -> list[OutboundMessage]:
    """Every outbound message queued so far, in order."""
    rows = await app.db.fetchall("SELECT payload FROM bus_messages WHERE topic LIKE 'outbound%' ORDER BY id")
    return [OutboundMessage.model_validate_json(row["payload"]) for row in rows]


async def run_inbox(app: App) -> None:
    """Let the runner worker handle everything on the inbound topic, then return."""
    await app.runner_worker().run(burst=True)
