"""The profile note: what the assistant knows about its person, read fresh before every turn.

The note is an ordinary Markdown note (``VAULTBOT_MEMORY__NOTE``, ``About me.md`` by default) that the
model appends lasting facts to with ``vault_write`` and the person edits in Obsidian. Its text goes into
the system prompt's cached part (``bot.runner.loop.system_prompt``): it costs cache reads, not fresh
tokens, until it changes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

import vault
from bot.consent import Provenance, Untrusted, label, note_source, profile_block
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


def instructions(rel: str, body: str | None, untrusted: str | None = None) -> str:
    """The system prompt's part about the person: the note's text and how to keep it. ``untrusted``
    names where its words came from when it holds words a tainted run wrote: then they are shown in
    that label, someone else's words like any other (``bot.consent.provenance``)."""
    folder, _, name = rel.rpartition("/")
    title = name.removesuffix(".md")
    write = f'vault_write with mode "append", folder "{folder}", title "{title}"'
    lines = [f"What you know about the person you assist, from their profile note {rel}:"]
    # In a block the note's own text cannot close, whatever it holds (bot.consent.profile_block).
    if body and untrusted is not None:
        lines.append(label(Untrusted(body, untrusted)))
    else:
        lines.append(profile_block(body) if body else "(The profile note is empty or does not exist yet.)")
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


def profile_reader(notes: vault.Vault, rel: str, provenance: Provenance | None = None) -> Callable[[], Awaitable[str]]:
    """A function that reads the profile note (in a thread) and returns the system prompt's part about it;
    with ``provenance``, words in it that a tainted run wrote are labelled with their sources (looked up
    every turn, in the store: no model call).

    The note is looked at before every turn, but read and parsed again only when its file changed: the
    part is kept with the file's identity, size and times (a missing note's too), once its last change is
    at least :data:`_SETTLED_NS` old when it is read, so a second edit within the file system's time
    granularity that keeps the size is not taken for no edit."""
    kept: tuple[tuple[int, ...] | None, str | None, str] | None = None

    def current() -> tuple[str | None, str]:
        nonlocal kept
        seen = _signature(notes, rel)
        if kept is not None and kept[0] == seen:
            return kept[1], kept[2]
        body = read_body(notes, rel)
        text = instructions(rel, body)
        # One assignment: turns of other conversations run this in other threads at the same time.
        kept = (seen, body, text) if seen is None or time.time_ns() - seen[-1] > _SETTLED_NS else None
        return body, text

    async def read() -> str:
        body, text = await asyncio.to_thread(current)
        if provenance is None or not body:
            return text
        sources = await provenance.sources_in(body)
        return instructions(rel, body, note_source(sources, "profile note")) if sources else text

    return read


# Two seconds: the coarsest file system clock in use (FAT's); a change within it may keep the file's times.
_SETTLED_NS = 2_000_000_000


def _signature(notes: vault.Vault, rel: str) -> tuple[int, ...] | None:
    """The note's file identity, size and times, its last change (ctime, which no program sets) last; None
    without a file."""
    try:
        stat = notes.resolve(rel).stat()
    except (vault.VaultError, OSError):
        return None
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns
