"""Slash commands (/note, /find, /log, /new, /status, /reminders, /cancel, /undo, /help): answered without the model.

They arrive on the bus like any message, so they are as durable and exactly-once as a model
turn, and they work in capture mode and in every channel.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from bot.bus import Button
from bot.clock import Clock, local_time
from bot.menu import COMMANDS
from bot.reminders import ReminderBook, ReminderError
from bot.runner.budget import DailyBudget
from bot.runner.capture import title_from
from bot.runner.review_link import ReviewLink
from bot.store import Store
from bot.tools import Dispatcher, ToolContext, ToolOutcome
from bot.undo import Undoer, undo_in_chat

_NAMES = {name for name, _ in COMMANDS}
# A slash and a word, up to the first space or @bot: ``/note``, ``/bogus-cmd-zz``; not ``/etc/hosts``.
_COMMAND = re.compile(r"^/(\w[^\s/@]*)(?:@\w+)?(?:\s+(.*))?$", re.DOTALL)
# Telegram's own limit on a command's name: longer ones are cut where the reply names them.
_NAME_SHOWN = 32

HELP = """I keep your notes in a Markdown vault.
Send me thoughts, tasks, links or photos and I file them; ask me about them later.

/note <text> — file it as a note right away
/find <words> — search your notes
/log — what I did recently
/new — start a fresh conversation
/status — how I'm doing
/review — where to see everything I did, step by step
/reminders — your pending reminders
/cancel <id> — cancel a reminder
/undo — take back what my last change to your notes did"""

UNKNOWN = "I don't know the command /{name}, so I did nothing with that message.\n\n"

REVIEW_IN_TELEGRAM = "The review page: everything I did, step by step. Tap Review to open it."
REVIEW_OFF = (
    "The review page is not being served. Start it on the machine that runs me with `vaultbot review`, "
    "or set VAULTBOT_REVIEW__ENABLED=true for `vaultbot run`."
)


@dataclass(frozen=True)
class Command:
    """A parsed slash command."""

    name: str
    args: str


@dataclass
class CommandResult:
    """The reply to a command, and the tools it used (for the run's record)."""

    reply: str
    tools_called: list[str] = field(default_factory=list)
    # Why the command failed (a note that could not be saved): the run is recorded as failed.
    failure: str | None = None
    button: Button | None = None


def parse_command(text: str) -> Command | None:
    """``/note buy milk`` (or ``/note@my_bot …``) → Command; None for anything else.

    A first word of ``/`` and a word is a command attempt even when it is not one of ours (``/bogus``,
    ``/bogus-cmd-zz``), as Telegram marks it one: it is answered as unknown rather than filed as a note.
    A message that only starts with a path (``/etc/hosts is odd``) is not a command.
    """
    match = _COMMAND.match(text.strip())
    if match is None:
        return None
    return Command(match.group(1).lower(), (match.group(2) or "").strip())


class CommandRunner:
    """Answers commands with the same tools the model uses."""

    def __init__(
        self,
        *,
        dispatcher: Dispatcher,
        store: Store,
        inbox: str,
        mode: str,
        model_name: str,
        clock: Clock,
        reminders: ReminderBook,
        undoer: Undoer,
        budget: DailyBudget | None = None,
        review: ReviewLink | None = None,
    ) -> None:
        self._tools = dispatcher
        self._review = review or ReviewLink()
        self._store = store
        self._inbox = inbox
        self._mode = mode
        self._model_name = model_name
        self._clock = clock
        self._budget = budget
        self._reminders = reminders
        self._undoer = undoer

    async def run(self, command: Command, context: ToolContext) -> CommandResult:
        """Carry out one command."""
        if command.name == "note":
            return await self._note(command.args, context)
        if command.name == "find":
            return await self._find(command.args, context)
        if command.name == "log":
            return await self._log()
        if command.name == "new":
            await self._store.reset_history(context.conversation)
            return CommandResult("Starting a fresh conversation. Your notes are all still there.")
        if command.name == "status":
            return await self._status(context)
        if command.name == "review":
            return await self._review_page()
        if command.name == "reminders":
            return await self._list_reminders(context)
        if command.name == "cancel":
            return await self._cancel(command.args, context)
        if command.name == "undo":
            return await self._undo(command.args, context)
        if command.name not in _NAMES:
            name = command.name if len(command.name) <= _NAME_SHOWN else command.name[:_NAME_SHOWN] + "…"
            return CommandResult(UNKNOWN.format(name=name) + HELP)
        greeting = "Hello! " if command.name == "start" else ""
        return CommandResult(greeting + HELP + self._mode_line())

    async def _review_page(self) -> CommandResult:
        if self._review.app_url is not None:
            return CommandResult(REVIEW_IN_TELEGRAM, button=Button(text="Review", url=self._review.app_url))
        url = await self._review.find(self._store)
        return CommandResult(f"The review page: {url}" if url else REVIEW_OFF)

    async def _note(self, text: str, context: ToolContext) -> CommandResult:
        if not text:
            return CommandResult("Usage: /note <text to file>")
        title = title_from(text)
        written = await self._call(
            "vault_write", {"folder": self._inbox, "title": title, "content": text, "tags": ["note"]}, context
        )
        if written.is_error:
            error = written.result["error"]
            entry = {"summary": f"Could not file a note: {title} ({error})", "category": "error"}
            await self._call("log_interaction", entry, context)
            return CommandResult(
                f"I could not save that: {error}", ["vault_write", "log_interaction"], failure=f"not saved: {error}"
            )
        await self._call("log_interaction", {"summary": f"Filed a note: {title}", "category": "note"}, context)
        verb = "Already saved as" if written.result.get("unchanged") else "Saved to"
        return CommandResult(f"{verb} {written.result['path']}.", ["vault_write", "log_interaction"])

    async def _find(self, query: str, context: ToolContext) -> CommandResult:
        if not query:
            return CommandResult("Usage: /find <words>")
        found = await self._call("vault_search", {"query": query, "limit": 5}, context)
        if found.is_error:
            return CommandResult(f"I could not search: {found.result['error']}", ["vault_search"])
        hits = found.result["results"]
        if not hits:
            return CommandResult(f"Nothing in your notes matches “{query}”.", ["vault_search"])
        lines = [f"{i}. {hit['path']}\n   {hit['snippet']}" for i, hit in enumerate(hits, 1)]
        return CommandResult("\n".join(lines), ["vault_search"])

    async def _call(self, name: str, input: dict[str, Any], context: ToolContext) -> ToolOutcome:
        """One tool call, recorded as a step of the command's run like the model's calls are, so
        the audit trail (and the review page's notes) shows what a command wrote."""
        started = time.perf_counter()
        outcome = await self._tools.call(name, input, context)
        await self._store.add_step(
            context.run_id,
            kind="tool",
            name=name,
            input=input,
            output=outcome.result,
            is_error=outcome.is_error,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
        return outcome

    async def _undo(self, args: str, context: ToolContext) -> CommandResult:
        where = {"conversation": context.conversation, "run_id": context.run_id, "into": context.changes}
        return CommandResult(await undo_in_chat(self._undoer, self._store, args, **where))

    async def _list_reminders(self, context: ToolContext) -> CommandResult:
        pending = await self._reminders.pending(context.conversation)
        if not pending:
            return CommandResult("No reminders pending.")
        lines = []
        for reminder in pending:
            when = reminder.next.strftime("%a %Y-%m-%d %H:%M %Z") if reminder.next else "—"
            repeat = f" (repeats {reminder.repeat})" if reminder.repeat else ""
            lines.append(f"• {reminder.id} — {when}: {reminder.text}{repeat}")
        return CommandResult("\n".join(lines) + "\n\nCancel one with /cancel ID.")

    async def _cancel(self, reminder_id: str, context: ToolContext) -> CommandResult:
        if not reminder_id:
            return CommandResult("Usage: /cancel <id> (see /reminders)")
        try:
            cancelled = await self._reminders.cancel(context.conversation, reminder_id)
        except ReminderError as exc:
            return CommandResult(str(exc))
        return CommandResult(f"Cancelled {cancelled.id}: {cancelled.text}")

    async def _log(self) -> CommandResult:
        entries = await self._store.list_interactions(limit=5)
        if not entries:
            return CommandResult("Nothing logged yet.")
        lines = [f"• {local_time(e['created_at'], self._clock.tz)} [{e['category']}] {e['summary']}" for e in entries]
        return CommandResult("\n".join(lines))

    async def _status(self, context: ToolContext) -> CommandResult:
        # The newest run is usually this /status itself, which is still running: report the one before.
        runs = [run for run in await self._store.list_runs(limit=2) if run["id"] != context.run_id]
        last = ""
        if runs:
            last = f"Last run: {runs[0]['status']} at {local_time(runs[0]['started_at'], self._clock.tz)}."
        return CommandResult(f"Running. {self._mode_line().strip()} {last}".strip() + "\n" + await self._spend_line())

    async def _spend_line(self) -> str:
        if self._budget is not None:
            state = await self._budget.state()
            over = " The budget is spent: messages are filed without the assistant." if state.exhausted else ""
            return f"Spend: {state.describe()}.{over}"
        spent = await self._store.spend_today(self._clock.tz, self._clock.now())
        return f"Spent today: ${spent:.2f} (no daily budget set)."

    def _mode_line(self) -> str:
        if self._mode == "capture":
            return "\n\nCapture mode: no API key is set, so I file every message in your inbox."
        return f"\n\nAssistant mode with {self._model_name}."
