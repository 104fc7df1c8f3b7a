"""The daily budget: once today's model spend reaches ``VAULTBOT_BUDGET__DAILY_USD``, messages are
filed in capture mode until midnight in the user's time zone.

Checked before a turn starts, so a turn already running finishes; a message over budget is still
handled (filed), never refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from bot.clock import Clock, day_bounds
from bot.store import Store

__all__ = ["BudgetState", "DailyBudget"]


@dataclass(frozen=True)
class BudgetState:
    """Today's spend against the cap, and when the day ends (in the user's zone)."""

    limit_usd: float
    spent_usd: float
    day: str
    resets_at: datetime

    @property
    def exhausted(self) -> bool:
        """True once today's spend has reached the cap (to a billionth of a dollar: sums of
        floating-point costs land a hair below round figures)."""
        return round(self.spent_usd, 9) >= self.limit_usd

    def describe(self) -> str:
        """``$1.20 spent of $5.00 today; resets at 00:00 on Tue 24 Nov (Europe/Berlin)``."""
        return f"${self.spent_usd:.2f} spent of ${self.limit_usd:.2f} today; resets at {resets(self.resets_at)}"

    def notice(self) -> str:
        """What a conversation is told, once a day, when its message is filed because of the budget."""
        return (
            f"Today's budget of ${self.limit_usd:.2f} is spent (${self.spent_usd:.2f} so far), so until "
            f"{resets(self.resets_at)} I file your messages in the vault without the assistant. "
            "Commands such as /find and /note still work."
        )


def resets(moment: datetime) -> str:
    """A local reset time a person reads at a glance."""
    zone = getattr(moment.tzinfo, "key", None) or moment.tzname()
    return f"{moment:%H:%M} on {moment:%a %d %b} ({zone})"


class DailyBudget:
    """Today's spend from the store, against a cap, on the app's clock."""

    def __init__(self, store: Store, clock: Clock, limit_usd: float) -> None:
        self._store = store
        self._clock = clock
        self.limit_usd = limit_usd

    async def state(self) -> BudgetState:
        """How today stands."""
        now = self._clock.now()
        spent = await self._store.spend_today(self._clock.tz, now)
        midnight = day_bounds(now.date(), self._clock.tz)[1].astimezone(self._clock.tz)
        return BudgetState(self.limit_usd, spent, now.date().isoformat(), midnight)
