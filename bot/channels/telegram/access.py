"""Who may use the bot: deny by default. How a stranger is refused without letting them make it
spam is the store's (:class:`bot.store.Strangers`), shared by every channel."""

from __future__ import annotations

from dataclasses import dataclass

from bot.channels.access import Decision
from bot.channels.telegram.updates import Incoming

REFUSAL = "Sorry, this is a private assistant."


@dataclass
class Access:
    """The allowlist and the group policy."""

    allowed_users: set[int]
    allow_groups: bool = False

    def decide(self, incoming: Incoming) -> Decision:
        """``serve``, ``ignore`` (not for us: a group message not addressed to the bot), or ``refuse``."""
        if incoming.chat_type != "private":
            if not self.allow_groups or not incoming.addressed_to_bot:
                return "ignore"
        if incoming.user_id is not None and incoming.user_id in self.allowed_users:
            return "serve"
        return "refuse"
