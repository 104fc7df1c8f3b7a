"""Who may use the bot: deny by default, and refuse strangers without letting them make it spam."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from bot.channels.telegram.updates import Incoming

REFUSAL = "Sorry, this is a private assistant."
# A stranger hears the refusal at most once in this many seconds.
REFUSAL_INTERVAL = 3600.0


@dataclass
class Access:
    """The allowlist, the group policy, and when each stranger was last refused."""

    allowed_users: set[int]
    allow_groups: bool = False
    clock: Callable[[], float] = time.monotonic
    _refused_at: dict[int, float] = field(default_factory=dict)

    def decide(self, incoming: Incoming) -> str:
        """``serve``, ``ignore`` (not for us: a group message not addressed to the bot), or ``refuse``."""
        if incoming.chat_type != "private":
            if not self.allow_groups or not incoming.addressed_to_bot:
                return "ignore"
        if incoming.user_id is not None and incoming.user_id in self.allowed_users:
            return "serve"
        return "refuse"

    def should_answer_refusal(self, user_id: int | None) -> bool:
        """True for the first refusal of a stranger in :data:`REFUSAL_INTERVAL` seconds."""
        key = user_id if user_id is not None else 0
        now = self.clock()
        last = self._refused_at.get(key)
        if last is not None and now - last < REFUSAL_INTERVAL:
            return False
        self._refused_at[key] = now
        return True
