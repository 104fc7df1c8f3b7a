"""What a tool knows about the run it serves. Built by the worker, never by the model."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bot.store import ChangeSet


@dataclass
class ToolContext:
    """The run's identity and where replies go.

    ``recipient`` is injected here from the inbound message; the model cannot choose it.
    ``sent`` counts replies queued in this run, which also numbers them: an outbound message is
    keyed by (inbound message, sequence), so a re-run after a crash does not send it twice.
    ``read`` holds the notes the run has read (``replace`` needs one), ``addresses`` the addresses the
    person sent in the conversation (normalised, ``bot.consent.same_address``): only their link
    previews may show. ``sources`` are those of someone else's words the run holds so far (empty: a clean
    run), which what it writes in the vault or schedules keeps (``bot.consent.provenance``), and ``own``
    what the person typed in the conversation, which stays theirs wherever it is copied. ``changes``
    gathers what the run changes in the vault, kept with the run when it ends. ``person`` is the sender
    of the message the run answers: the only one whose answer to its questions counts. ``fence`` renews
    the lease of that message, raising ``bot.bus.LeaseLost`` when it was claimed again since: the
    dispatcher awaits it before each call whose effects reach outside the store (``reaches_out``).
    """

    conversation: str
    channel: str
    recipient: str
    run_id: str
    inbound_id: str
    person: str = ""
    sent: int = field(default=0)
    scheduled: int = field(default=0)
    read: set[str] = field(default_factory=set)
    addresses: frozenset[str] = field(default_factory=frozenset)
    sources: frozenset[str] = field(default_factory=frozenset)
    own: str = ""
    changes: ChangeSet = field(default_factory=ChangeSet)
    fence: Callable[[], Awaitable[None]] | None = None

    def next_sequence(self) -> int:
        """Number the next reply of this run (1, 2, …)."""
        self.sent += 1
        return self.sent

    def next_schedule_key(self) -> str:
        """Key the next ``schedule_message`` call of this run by (inbound message, call sequence)."""
        self.scheduled += 1
        return f"{self.inbound_id}:{self.scheduled}"
