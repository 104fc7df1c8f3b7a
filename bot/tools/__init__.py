"""The tools the model can call, and the dispatcher that runs them."""

from __future__ import annotations

import vault
from bot.bus import Bus
from bot.store import Store
from bot.tools.base import Tool
from bot.tools.context import ToolContext
from bot.tools.dispatcher import Dispatcher, ToolOutcome
from bot.tools.errors import ToolError, failure
from bot.tools.messaging import LogInteraction, SendMessage, queue_notice, queue_reply
from bot.tools.vault_tools import VaultList, VaultRead, VaultSearch, VaultWrite

__all__ = [
    "Dispatcher",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolOutcome",
    "build_dispatcher",
    "failure",
    "queue_notice",
    "queue_reply",
]


def build_dispatcher(notes: vault.Vault, bus: Bus, store: Store) -> Dispatcher:
    """The six tools of DESIGN.md, wired to one vault, bus and store."""
    return Dispatcher(
        [
            VaultWrite(notes),
            VaultRead(notes),
            VaultList(notes),
            VaultSearch(notes),
            LogInteraction(store),
            SendMessage(bus),
        ]
    )
