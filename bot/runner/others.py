"""A message with the words that came with it but are someone else's (``InboundMessage.untrusted``).

The model reads them after what the person wrote, each in its label (``bot.consent.label``), so they
are information and never orders; capture mode files them as plain text under a line saying whose
they are, since no model reads them there.
"""

from __future__ import annotations

from bot.bus import InboundMessage, UntrustedPart
from bot.consent import Untrusted, label


def with_others(text: str, message: InboundMessage, *, labelled: bool) -> str:
    """``text`` (what the person wrote) followed by the message's untrusted parts: ``labelled`` for
    the model, plain for a note."""
    if not message.untrusted:
        return text
    shown = [_labelled(part) if labelled else _plain(part) for part in message.untrusted]
    return "\n".join([text, *shown]) if text.strip() else "\n".join(shown)


def _heading(part: UntrustedPart) -> str:
    origin = f" from {part.origin}" if part.origin else ""
    return f"{part.source.capitalize()}{origin}:"


def _labelled(part: UntrustedPart) -> str:
    # The origin (a name someone chose) goes inside the label: it is their words too.
    return label(Untrusted(f"{_heading(part)}\n{part.text}", part.source))


def _plain(part: UntrustedPart) -> str:
    return f"{_heading(part)}\n{part.text}"
