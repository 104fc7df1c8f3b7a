"""The tools the model can call, and the dispatcher that runs them."""

from __future__ import annotations

from collections.abc import Callable

import vault
from bot.bus import Bus
from bot.clip import Clipper
from bot.consent import Provenance
from bot.reminders import ReminderBook
from bot.store import Store
from bot.tools.base import ContentResult, Tool
from bot.tools.clip_tool import ClipLink
from bot.tools.context import ToolContext
from bot.tools.dispatcher import Checked, Dispatcher, ToolOutcome, ToolSource
from bot.tools.errors import ToolError, failure
from bot.tools.messaging import TELLING, LogInteraction, SendMessage, notice, queue_notice, queue_reply, reply
from bot.tools.scheduling import CancelScheduled, ListScheduled, ScheduleMessage
from bot.tools.vault_tools import VaultList, VaultRead, VaultSearch, VaultWrite

__all__ = [
    "BUILT_IN_NAMES",
    "TELLING",
    "Checked",
    "ContentResult",
    "Dispatcher",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolOutcome",
    "ToolSource",
    "build_dispatcher",
    "failure",
    "notice",
    "queue_notice",
    "queue_reply",
    "reply",
]

# Every name a built-in tool can have, whichever are configured: no other tool may take one.
BUILT_IN_NAMES = frozenset(
    tool.name
    for tool in (
        VaultWrite,
        VaultRead,
        VaultList,
        VaultSearch,
        LogInteraction,
        SendMessage,
        ScheduleMessage,
        ListScheduled,
        CancelScheduled,
        ClipLink,
    )
)


def build_dispatcher(
    notes: vault.Vault,
    bus: Bus,
    store: Store,
    reminders: ReminderBook | None = None,
    on_scheduled: Callable[[], None] = lambda: None,
    clipper: Clipper | None = None,
    more: ToolSource | None = None,
    foreign: dict[str, str] | None = None,
    provenance: Provenance | None = None,
) -> Dispatcher:
    """The built-in tools (notes, the interaction log, replies), wired to one vault, bus and store; the
    scheduling tools when ``reminders`` is given (``on_scheduled`` wakes the scheduler), ``clip_link``
    when ``clipper`` is; ``more`` adds the MCP servers' tools. ``foreign`` names the folders whose notes hold
    someone else's words (folder → what they are, e.g. the clip folder → "clipped page"); ``provenance``
    keeps the sources of what a tainted run writes and finds them again in what a run reads."""
    tools: list[Tool] = [
        VaultWrite(notes, foreign, provenance),
        VaultRead(notes, foreign, provenance),
        VaultList(notes, foreign, provenance),
        VaultSearch(notes, foreign, provenance),
        LogInteraction(store),
        SendMessage(bus),
    ]
    if reminders is not None:
        tools += [ScheduleMessage(reminders, on_scheduled), ListScheduled(reminders), CancelScheduled(reminders)]
    if clipper is not None:
        tools.append(ClipLink(clipper, provenance))
    return Dispatcher(tools, more)
