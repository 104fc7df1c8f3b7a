"""What an undo says: in the chat, on the command line and in the interaction log."""

from __future__ import annotations

from bot.store import short_id
from bot.undo.undoer import Item, Report

__all__ = ["log_line", "told"]

# What taking back each kind of change does, said of the file.
_DONE = {
    "created": "moved to {kept}",
    "restored": "moved to {kept}",
    "attachment": "moved to {kept}",
    "appended": "took out the added text",
    "replaced": "put back its earlier text",
    "reverted": "put back the text the undo had taken back",
    "trashed": "put back from .trash",
}
_WOULD = {
    "created": "would go to .trash",
    "restored": "would go to .trash",
    "attachment": "would go to .trash",
    "appended": "the added text would be taken out",
    "replaced": "its earlier text would be put back",
    "reverted": "the text the undo had taken back would be put back",
    "trashed": "would be put back from .trash",
}


def told(report: Report, again: str | None) -> str:
    """The reply: what was taken back, what was left and why, and ``again``, the command that puts
    it all back (None on a dry run)."""
    name = f"run {short_id(report.run_id)}"
    if not report.items:
        return f"Nothing to undo: {name} changed nothing in the vault."
    if report.undid is not None:
        name += f" (an undo of run {short_id(report.undid)})"
    done = [item for item in report.items if item.taken_back]
    left = [item for item in report.items if not item.taken_back]
    lines = []
    if done:
        lines.append(f"{'Would undo' if report.dry_run else 'Undid'} {name}:")
        lines += [f"• {item.change.path}: {_what(item, report.dry_run)}{_tainted(item)}" for item in done]
    else:
        lines.append(f"Nothing of {name} {'would be' if report.dry_run else 'was'} taken back.")
    if left:
        lines.append("Left as it is:" if len(left) == 1 else "Left as they are:")
        lines += [f"• {item.change.path}: {item.outcome.reason}{_tainted(item)}" for item in left]
    if again is not None and report.changes:
        lines.append(f"{again} puts it back.")
    return "\n".join(lines)


def log_line(report: Report) -> str:
    """The interaction log's entry for an undo."""
    done = sum(item.taken_back for item in report.items)
    line = f"Undid run {short_id(report.run_id)}: {done} of {len(report.items)} changes taken back"
    left = [item for item in report.items if not item.taken_back]
    if left:
        line += "; left: " + "; ".join(f"{item.change.path} ({item.outcome.reason})" for item in left)
    return line + "."


def _tainted(item: Item) -> str:
    """What a change written by a run holding someone else's words says of them (``bot.consent.provenance``)."""
    sources = item.change.detail.get("sources")
    return f" (written with words from {', '.join(sources)})" if sources else ""


def _what(item: Item, dry_run: bool) -> str:
    if item.outcome.status == "already":
        return f"already as before ({item.outcome.reason})"
    if dry_run:
        return _WOULD[item.change.kind]
    made = item.outcome.change
    return _DONE[item.change.kind].format(kept=made.kept if made is not None else ".trash")
