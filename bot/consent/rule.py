"""The one rule that says ask or run: a pure function of the call, the run's taint and the policy.

Once a run holds someone else's words (``Taint.tainted``), these calls wait for the person's
consent, because each can carry what the run knows out of the vault or keep an injection alive:

- ``clip_link`` of an address the person did not send in this conversation (the address itself,
  its path and query, is what reaches the other site);
- any ``mcp__SERVER__TOOL`` call to a server not marked ``trusted = true``;
- ``schedule_message`` with ``run_model`` (the model acting later, on its own);
- any ``vault_write`` to the profile note (read before every turn, like the system prompt).

Everything else runs at once, and a clean run asks nothing: the person's own requests stay frictionless.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bot.consent.shown import inline, quoted
from bot.consent.untrusted import Taint, same_address
from vault.paths import note_stem

__all__ = ["Policy", "question_for"]


@dataclass(frozen=True)
class Policy:
    """What the rule needs of the settings: the profile note (vault-relative) and the MCP servers
    whose calls need no question."""

    profile_note: str
    trusted_servers: frozenset[str] = frozenset()


def question_for(name: str, input: dict[str, Any], taint: Taint, policy: Policy) -> str | None:
    """The question to ask the person before this call (``input`` validated), or None to run it now.
    What the model wrote is shown quoted (``bot.consent.shown``): plain, visible, bounded."""
    if not taint.tainted:
        return None
    if name == "clip_link":
        url = str(input.get("url", ""))
        address = same_address(url)
        if not address or address in taint.addresses:  # not an http(s) address, the tool refuses it
            return None
        return _asking(
            f"Fetch this address, which you did not send in this chat?\n{quoted(url, 'the address')}",
            "Fetching it sends the whole address, the part after ? included, to that site.",
            taint,
        )
    if name.startswith("mcp__"):
        _, server, tool = (name.split("__", 2) + ["", ""])[:3]
        if server in policy.trusted_servers:
            return None
        arguments = json.dumps(input, ensure_ascii=False, indent=1) if input else "(no arguments)"
        return _asking(
            f"Call {tool} on the MCP server {server}, with these arguments?\n{quoted(arguments, 'the arguments')}",
            "The server receives everything in them.",
            taint,
        )
    if name == "schedule_message" and input.get("run_model"):
        repeat = f", repeating {inline(str(input['repeat']))}" if input.get("repeat") else ""
        return _asking(
            f"Schedule the assistant to act on its own at {inline(str(input.get('at')))}{repeat}?\n"
            f"Then it would handle this as if you had sent it:\n{quoted(str(input.get('text', '')), 'the task')}",
            "It would act without you there to see it.",
            taint,
        )
    if name == "vault_write" and _is_profile(input, policy.profile_note):
        mode = input.get("mode") or "create"
        verb = {"append": "add to", "replace": "replace the text of"}.get(mode, "write")
        return _asking(
            f"Let the assistant {verb} your profile note {policy.profile_note}?\n"
            f"{quoted(str(input.get('content', '')), 'the text')}",
            "It reads that note before every answer, so what is written there shapes every later turn.",
            taint,
        )
    return None


def _is_profile(input: dict[str, Any], profile_note: str) -> bool:
    """Whether a write's title names the profile note. Its folder is left out on purpose: a note of that
    name anywhere is asked about, so no spelling of the folder ("", "/", ".", another case) slips by."""
    stem = profile_note.rsplit("/", 1)[-1].removesuffix(".md")
    title = str(input.get("title", ""))
    return bool(title.strip()) and note_stem(title).casefold() == note_stem(stem).casefold()


# At most this many sources are named in a question; the rest are counted.
SOURCES_NAMED = 5


def _asking(what: str, why: str, taint: Taint) -> str:
    named = sorted(taint.sources)
    sources = ", ".join(inline(source, 80) for source in named[:SOURCES_NAMED])
    if len(named) > SOURCES_NAMED:
        sources += f" and {len(named) - SOURCES_NAMED} more"
    return (
        f"{what}\n\n{why} This conversation holds words you did not write ({sources}), which may have asked for this."
    )
