"""The terminal channel: typed (or piped) lines in, replies printed.

Like every channel it only talks to the bus: lines are published as inbound messages, and an
outbound worker prints what the runner queued for this conversation. Given the runs' progress (at
an interactive terminal), it also prints a reply as it is written; the reply, when it arrives from
the outbox, then only ends the line instead of being printed again.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections.abc import AsyncIterator
from typing import TextIO

from bot.bus import (
    INBOUND,
    Answer,
    Bus,
    Delivery,
    InboundMessage,
    OutboundMessage,
    Sender,
    Worker,
    events_topic,
    outbound_topic,
)
from bot.channels.notices import event_notice
from bot.channels.seats import CHANNEL, conversation_of, whoami
from bot.streaming import Draft, Progress

# How often the session re-checks whether a turn is finished when nothing changed in-process.
_SETTLE_POLL = 1.0
_PREFIX = "vaultbot> "
ASK = "Allow? [y/N]"
_INDENT = "\n" + " " * len(_PREFIX)


class OutputClosed(Exception):
    """The terminal's output is gone (the program reading a pipe, such as ``head``, exited)."""


class TerminalChannel:
    """One person at one terminal."""

    def __init__(
        self,
        bus: Bus,
        out: TextIO,
        *,
        user: str | None = None,
        conversation: str | None = None,
        progress: Progress | None = None,
    ) -> None:
        """``conversation`` defaults to ``terminal:USER`` (see :mod:`bot.channels.seats` for several
        terminals at once). With ``progress``, replies are printed as they are written (run
        :meth:`stream` beside the workers)."""
        self._bus = bus
        self._out = out
        self.user = user or whoami()
        self.conversation = conversation or conversation_of(self.user, 1)
        # Subscribed before the runner starts, so no run is missed.
        self._subscription = progress.subscribe(CHANNEL) if progress is not None else None
        self._draft: Draft | None = None  # the draft being printed, and how much of its segment is
        self._segment = -1
        self._printed = ""
        self._open = False  # a streamed line waits for the rest of its reply
        self.output_closed = False
        # The question for consent the last printed message asks, until it is answered or decided.
        self.asking: str | None = None
        # Woken by a change on the bus and by the output closing: what :meth:`settled` waits on.
        self._wake = asyncio.Event()

    async def stream(self) -> None:
        """Print this conversation's replies as they are written, until cancelled."""
        if self._subscription is None:
            return
        with self._subscription as subscription, contextlib.suppress(OutputClosed):
            while True:
                for draft in await subscription.changes():
                    if draft.conversation == self.conversation:
                        self._catch_up(draft)

    def _catch_up(self, draft: Draft) -> None:
        if draft.done and draft is not self._draft:
            return  # over before any of it was printed, or its reply already was: the outbox prints it
        if draft is not self._draft or draft.segment != self._segment:
            self._end_line()  # a new run, or text after a tool call: on a line of its own
            self._draft, self._segment, self._printed = draft, draft.segment, ""
        text = draft.text
        if len(text) > len(self._printed) and text.startswith(self._printed):
            self._write(("" if self._open else _PREFIX) + text[len(self._printed) :].replace("\n", _INDENT))
            self._printed, self._open = text, True

    def _end_line(self) -> None:
        if self._open:
            self._write("\n")
            self._open = False

    def _write(self, text: str) -> None:
        try:
            self._out.write(text)
            self._out.flush()
        except BrokenPipeError as exc:
            self.output_closed = True
            self._wake.set()
            raise OutputClosed("the terminal's output is closed") from exc

    def _streamed(self, message: OutboundMessage) -> bool:
        """True when ``message`` is the reply just printed as it was written."""
        draft = self._draft
        if draft is None or message.kind != "reply" or draft.key != message.in_reply_to:
            return False
        self._catch_up(draft)  # the last words may not have been printed yet
        return self._printed == message.text

    async def submit(self, text: str) -> int:
        """Publish one line as an inbound message; returns its bus id."""
        message = InboundMessage(
            channel=CHANNEL,
            conversation=self.conversation,
            sender=Sender(id=self.user, name=self.user),
            text=text,
        )
        published = await self._bus.publish(INBOUND, message, conversation=self.conversation)
        return published.id

    async def answer(self, line: str) -> int | None:
        """Publish ``line`` as the answer to the question asked (``y``/``yes`` allows; ``n``, ``no`` or
        nothing denies), and return its bus id; None when the line is not an answer but a new message,
        which the runner takes as declining the question."""
        question, said = self.asking, line.strip().casefold()
        if question is None or said not in ("y", "yes", "n", "no", ""):
            return None
        self.asking = None
        message = InboundMessage(
            channel=CHANNEL,
            conversation=self.conversation,
            sender=Sender(id=self.user, name=self.user),
            text="",
            answer=Answer(question=question, choice="allow" if said in ("y", "yes") else "deny"),
        )
        published = await self._bus.publish(INBOUND, message, conversation=self.conversation)
        return published.id

    async def deliver(self, delivery: Delivery) -> None:
        """Print one outbound message. Idempotent enough for a terminal: at most a reprint."""
        message = delivery.parse(OutboundMessage)
        try:
            if self._streamed(message):
                self._end_line()
                self._draft = None
                return
            if message.decision is not None:
                if self.asking == message.decision.question:
                    self.asking = None
                self._print("vaultbot (notice)> ", message.text)
                return
            # A terminal has no buttons: it shows where one leads, and asks a question in words.
            shown = f"{message.text}\n[{message.button.text}] {message.button.url}" if message.button else message.text
            if message.question is not None:
                self.asking = message.question
                shown += f"\n{ASK}"
            asks = message.kind == "reply" or message.question is not None
            self._print(_PREFIX if asks else "vaultbot (notice)> ", shown)
        except OutputClosed:
            await _hold()

    async def tell(self, delivery: Delivery) -> None:
        """Print the one-line notice of a run's event (a failure pattern, an escalation), if it has one."""
        notice = event_notice(delivery)
        if notice is not None:
            try:
                self._print("vaultbot (notice)> ", notice.text)
            except OutputClosed:
                await _hold()

    def _print(self, prefix: str, text: str) -> None:
        self._end_line()
        self._write(prefix + text.replace("\n", _INDENT) + "\n")

    def workers(self) -> list[Worker]:
        """The workers that print this conversation's replies and notices, each in order. Only this
        conversation's: another terminal's are for that terminal to print."""
        return [
            Worker(
                self._bus,
                outbound_topic(CHANNEL),
                self.deliver,
                concurrency=1,
                name="terminal",
                conversation=self.conversation,
            ),
            Worker(
                self._bus,
                events_topic(CHANNEL),
                self.tell,
                concurrency=1,
                name="terminal-events",
                conversation=self.conversation,
            ),
        ]

    async def settled(self, inbound_id: int) -> None:
        """Return once the inbound message is finished and every reply and notice is printed, or
        once the output is closed (:attr:`output_closed`: nothing more can be printed)."""
        topics = (outbound_topic(CHANNEL), events_topic(CHANNEL))
        with self._bus.listen(None, self._wake) as changed:
            while not self.output_closed:
                changed.clear()
                if await self._bus.status(inbound_id) in ("done", "dead") and not any(
                    [await self._bus.unfinished(topic, self.conversation) for topic in topics]
                ):
                    return
                # Woken by any change in this process; the timeout covers a worker in another one.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), _SETTLE_POLL)


async def _hold() -> None:
    """Keep an unprintable message until the chat stops its printer, which hands it back for the
    next start: retried into a closed pipe, it would only be dead-lettered."""
    await asyncio.get_running_loop().create_future()


async def read_lines(stream: TextIO, prompt: str | None, *, prompted: bool = False) -> AsyncIterator[str]:
    """Lines from ``stream`` without blocking the event loop; shows ``prompt`` at a terminal (from the
    second line on when ``prompted``: the first one is shown already).

    A daemon thread does the blocking reads, not the loop's executor: at Ctrl-C the program
    must not wait for a line that will never come.
    """
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str | None] = asyncio.Queue()

    def pump() -> None:
        while True:
            line = stream.readline()
            try:
                loop.call_soon_threadsafe(lines.put_nowait, line or None)
            except RuntimeError:  # the loop is closed: the program is exiting
                return
            if not line:
                return

    threading.Thread(target=pump, name="stdin", daemon=True).start()
    while True:
        if prompt and not prompted:
            sys.stderr.write(prompt)
            sys.stderr.flush()
        prompted = False
        line = await lines.get()
        if line is None:
            return
        yield line.rstrip("\n")
