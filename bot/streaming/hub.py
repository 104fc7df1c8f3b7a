"""Ephemeral progress of runs: the text a reply has so far, for channels that show it as it is written.

Unlike the bus, nothing here is durable or acknowledged: the reply itself still goes through the
outbox, which alone decides what is sent. Progress only lets a channel show it early. A channel
that is behind sees the latest state (updates coalesce, they never queue), one that is not
listening misses it, and a crash loses it. Publishing never awaits: it appends to a draft shared
with the subscribers and wakes them.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

__all__ = ["Draft", "DraftWriter", "Progress", "Subscription"]


@dataclass(eq=False)
class Draft:
    """What one run has written so far toward its reply. ``key`` is the run's inbound message id.

    A run writes in segments: text the model follows with a tool call is not the reply, so the next
    text starts a new segment (``segment`` counts them) instead of extending it. Subscribers read
    the current segment's ``text``; ``working`` is true while the run calls tools.
    """

    key: str
    channel: str
    conversation: str
    recipient: str
    segment: int = 0
    working: bool = False
    done: bool = False
    _parts: list[str] = field(default_factory=list, repr=False)

    @property
    def text(self) -> str:
        """The current segment's text (joined once per read, not once per delta)."""
        if len(self._parts) > 1:
            self._parts[:] = ["".join(self._parts)]
        return self._parts[0] if self._parts else ""


class Subscription:
    """One channel's view of progress: the drafts that changed since it last looked. Receives from
    :meth:`Progress.subscribe` until :meth:`close` (or the end of its ``with`` block)."""

    def __init__(self, channel: str, hub: Progress) -> None:
        self.channel = channel
        self._hub = hub
        self._changed: dict[str, Draft] = {}
        self._wake = asyncio.Event()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop receiving."""
        subscribers = self._hub._subscribers.get(self.channel, [])
        if self in subscribers:
            subscribers.remove(self)

    def _push(self, draft: Draft) -> None:
        self._changed[draft.key] = draft
        self._wake.set()

    async def changes(self) -> list[Draft]:
        """Wait until some draft changed; each changed draft once, however often it changed."""
        await self._wake.wait()
        self._wake.clear()
        changed = list(self._changed.values())
        self._changed.clear()
        return changed


class DraftWriter:
    """The run's end of one draft: every call updates it and wakes the subscribers, without awaiting."""

    def __init__(self, draft: Draft, hub: Progress) -> None:
        self.draft = draft
        self._hub = hub

    def text(self, delta: str) -> None:
        """More text of the reply being written."""
        draft = self.draft
        if draft.working:  # the text before the tool call was not the reply: start afresh
            draft.working = False
            draft.segment += 1
            draft._parts.clear()
        draft._parts.append(delta)
        self._hub._publish(draft)

    def tool_call(self, name: str) -> None:
        """The model turned to a tool: the text so far is not (the start of) the reply."""
        if not self.draft.working:
            self.draft.working = True
            self._hub._publish(self.draft)

    def end(self) -> None:
        """The run is over; its reply, if any, goes through the outbox."""
        self.draft.done = True
        self._hub._publish(self.draft)
        self._hub._live.pop(self.draft.key, None)


class Progress:
    """The in-process hub: runs open drafts, channels subscribe by channel name."""

    def __init__(self) -> None:
        self._subscribers: dict[str, list[Subscription]] = {}
        self._live: dict[str, Draft] = {}

    def open(self, *, key: str, channel: str, conversation: str, recipient: str) -> DraftWriter | None:
        """A writer for a run's draft, or None when no subscriber of ``channel`` would see it."""
        if not self._subscribers.get(channel):
            return None
        draft = Draft(key=key, channel=channel, conversation=conversation, recipient=recipient)
        self._live[key] = draft
        return DraftWriter(draft, self)

    def live(self, key: str) -> Draft | None:
        """The draft of the run on inbound message ``key`` still being written, if any."""
        return self._live.get(key)

    def subscribe(self, channel: str) -> Subscription:
        """Receive the drafts of runs replying on ``channel`` from now on. Subscribe before the
        runner starts, or a run it begins at once (a redelivery after a restart) is not seen."""
        subscription = Subscription(channel, self)
        self._subscribers.setdefault(channel, []).append(subscription)
        return subscription

    def _publish(self, draft: Draft) -> None:
        for subscription in self._subscribers.get(draft.channel, ()):
            subscription._push(draft)
