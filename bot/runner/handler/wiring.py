"""What a handler is built from, grouped by what each group is for."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from bot.bus import Bus
from bot.clock import Clock
from bot.consent import Policy
from bot.db import Database
from bot.runner.budget import DailyBudget
from bot.runner.capture import CaptureModel
from bot.runner.history import fit
from bot.runner.loop import Limits
from bot.runner.model import ModelClient
from bot.store import Store
from bot.tools import Dispatcher


@dataclass(frozen=True)
class Storage:
    """Where a turn's effects go: the database whose transactions hold them, the bus and the store."""

    db: Database
    bus: Bus
    store: Store


@dataclass(frozen=True)
class Assistant:
    """The model that answers messages in ``mode`` ("assistant" or "capture"), and what each run of it
    is given: the system prompt, the tools, the limits and the person's clock. ``profile`` reads what
    the assistant knows about its person, before every turn the model answers (``bot.memory``);
    ``policy`` says which calls of a run holding someone else's words wait for the person's consent."""

    model: ModelClient
    mode: str
    system: str
    dispatcher: Dispatcher
    limits: Limits
    clock: Clock
    profile: Callable[[], Awaitable[str]] | None = None
    policy: Policy | None = None


@dataclass(frozen=True)
class Window:
    """How much of a conversation's history a turn reads: its last ``turns``, cut to ``tokens``."""

    turns: int
    tokens: int

    def fit(self, turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The loaded ``turns`` cut to fit the window."""
        return fit(turns, self.tokens, window=self.turns)


def _inbox_filer() -> CaptureModel:
    return CaptureModel("Inbox", hint=None, log=False)


@dataclass(frozen=True)
class StandIns:
    """The models that answer in the assistant's place, as capture mode does: ``filer`` files dead
    letters (default: capture mode's notes in the inbox); ``over_budget`` files messages once ``budget``
    is spent for the day; ``links`` answers a message that is only a link (clipped, with no model call)."""

    filer: CaptureModel = field(default_factory=_inbox_filer)
    budget: DailyBudget | None = None
    over_budget: ModelClient | None = None
    links: ModelClient | None = None
