"""Slash commands (/note, /find, /log, /new, /status, /reminders, /cancel, /help): answered without the model.

They arrive on the bus like any message, so they are as durable and exactly-once as a model
turn, and they work in capture mode and in every channel.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from bot.clock import Clock
from bot.menu import COMMANDS
from bot.reminders import ReminderBook, ReminderError
from bot.runner.budget import DailyBudget
from bot.runner.capture import title_from
from bot.store import Store
from bot.tools import Dispatcher, ToolContext

_NAMES = {name for name, _ in COMMANDS}
_COMMAND = re.compile(r"^/([A-Za-z_]+)(?:@\w+)?(?:\s+(.*))?$", re.DOTALL)

HELP = """I keep your notes in a Markdown vault.
Send me thoughts, tasks, links or photos and I file them; ask me about them later.

/note <text> — file it as a note right away
/find <words> — search your notes
/log — what I did recently
/new — start a fresh conversation
/status — how I'm doing
/review — where to see everything I did, step by step
/reminders — your pending reminders
/cancel <id> — cancel a reminder"""

REVIEW_OFF = (
    "The review page is not being served. Start it on the machine that runs me with `vaultbot review`, "
    "or set VAULTBOT_REVIEW__ENABLED=true for `vaultbot run`."
)


@dataclass
class ReviewLink:
    """Where this process serves the review page, once it does (set by whoever serves it)."""

    url: str | None = None


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


def parse_command(text: str) -> Command | None:
    """``/note buy milk`` (or ``/note@my_bot …``) → Command; None for anything else."""
    match = _COMMAND.match(text.strip())
    if match is None or match.group(1).lower() not in _NAMES:
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
            url = self._review.url
            return CommandResult(f"The review page: {url}" if url else REVIEW_OFF)
        if command.name == "reminders":
            return await self._list_reminders(context)
        if command.name == "cancel":
            return await self._cancel(command.args, context)
        greeting = "Hello! " if command.name == "start" else ""
        return CommandResult(greeting + HELP + self._mode_line())

    async def _note(self, text: str, context: ToolContext) -> CommandResult:
        if not text:
            return CommandResult("Usage: /note <text to file>")
        title = title_from(text)
        written = await self._tools.call(
            "vault_write", {"folder": self._inbox, "title": title, "content": text, "tags": ["note"]}, context
        )
        if written.is_error:
            return CommandResult(f"I could not save that: {written.result['error']}", ["vault_write"])
        await self._tools.call("log_interaction", {"summary": f"Filed a note: {title}", "category": "note"}, context)
        verb = "Already saved as" if written.result.get("unchanged") else "Saved to"
        return CommandResult(f"{verb} {written.result['path']}.", ["vault_write", "log_interaction"])

    async def _find(self, query: str, context: ToolContext) -> CommandResult:
        if not query:
            return CommandResult("Usage: /find <words>")
        found = await self._tools.call("vault_search", {"query": query, "limit": 5}, context)
        if found.is_error:
            return CommandResult(f"I could not search: {found.result['error']}", ["vault_search"])
        hits = found.result["results"]
        if not hits:
            return CommandResult(f"Nothing in your notes matches “{query}”.", ["vault_search"])
        lines = [f"{i}. {hit['path']}\n   {hit['snippet']}" for i, hit in enumerate(hits, 1)]
        return CommandResult("\n".join(lines), ["vault_search"])

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
        lines = [f"• {e['created_at'][:16].replace('T', ' ')} [{e['category']}] {e['summary']}" for e in entries]
        return CommandResult("\n".join(lines))

    async def _status(self, context: ToolContext) -> CommandResult:
        # The newest run is usually this /status itself, which is still running: report the one before.
        runs = [run for run in await self._store.list_runs(limit=2) if run["id"] != context.run_id]
        last = ""
        if runs:
            when = datetime.fromisoformat(runs[0]["started_at"]).astimezone(self._clock.tz)
            last = f"Last run: {runs[0]['status']} at {when:%Y-%m-%d %H:%M %Z}."
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
