"""The profile note: what the assistant knows about its person, read fresh before every turn.

The note is an ordinary Markdown note (``VAULTBOT_MEMORY__NOTE``, ``About me.md`` by default) that the
model appends lasting facts to with ``vault_write`` and the person edits in Obsidian. Its text goes into
the system prompt's cached part (``bot.runner.loop.system_prompt``): it costs cache reads, not fresh
tokens, until it changes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import vault
from vault import frontmatter

log = logging.getLogger(__name__)

# Past this many words the model is asked to condense the note: every turn carries it.
WORD_LIMIT = 2000


def read_body(notes: vault.Vault, rel: str) -> str | None:
    """The body of the note at ``rel`` (front matter left out), or None when there is none."""
    try:
        path = notes.resolve(rel)
        data = path.read_bytes()
    except (vault.VaultError, FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    except OSError as exc:  # unreadable: the turn goes on without it rather than failing
        log.warning("the profile note %s could not be read (%s)", rel, exc.strerror or type(exc).__name__)
        return None
    return frontmatter.parse(data.decode("utf-8", errors="replace"))[1].strip()


def instructions(rel: str, body: str | None) -> str:
    """The system prompt's part about the person: the note's text and how to keep it."""
    folder, _, name = rel.rpartition("/")
    title = name.removesuffix(".md")
    write = f'vault_write with mode "append", folder "{folder}", title "{title}"'
    lines = [f"What you know about the person you assist, from their profile note {rel}:"]
    lines.append(f"<profile>\n{body}\n</profile>" if body else "(The profile note is empty or does not exist yet.)")
    lines.append(
        f"When you learn a lasting fact about the person (their name, family and partner, city, work, diet, "
        f"health, preferences, recurring commitments), add it to this note as one short line with {write}, "
        "alongside your other tool calls. Do not add passing things (today's mood, a one-off errand, what "
        "they had for lunch), and never add what the note already says. The person edits this note too; "
        "what it says is as they left it."
    )
    words = len(body.split()) if body else 0
    if words > WORD_LIMIT:
        lines.append(
            f"The profile note has {words:,} words, more than {WORD_LIMIT:,}: condense it now. Read it, then "
            f'rewrite it with vault_write mode "replace", keeping every lasting fact once, merged and short.'
        )
    return "\n".join(lines)


def profile_reader(notes: vault.Vault, rel: str) -> Callable[[], Awaitable[str]]:
    """A function that reads the profile note (in a thread) and returns the system prompt's part about it."""

    async def read() -> str:
        return instructions(rel, await asyncio.to_thread(read_body, notes, rel))

    return read
