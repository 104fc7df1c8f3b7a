"""Nothing rendered reaches out: the remote embeds of a note written by a tainted run become plain links.

Obsidian fetches an embedded image (``![chart](http://…)``, ``<img src="http://…">``, an ``<iframe>``,
``<video>`` or ``<audio>``) the moment the note is opened, so such an address in a note a run holding
someone else's words wrote could carry what the run read out of the vault with no click at all. Each one
to an address the person did not send is written instead as text naming the address, which the person
can still see and click (Obsidian links a bare address), and nothing is fetched on opening.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.consent.untrusted import same_address

__all__ = ["Unlinked", "unlinked"]

# ![alt](address "title") and ![alt](<address>): everything to the closing parenthesis on its line, as
# lenient renderers read it (an address with spaces in it still loads in some).
_IMAGE = re.compile(r"!\[([^\]\n]*)\]\(([^)\n]*)\)")
_TITLE = re.compile(r"\s+(?:\"[^\"]*\"|'[^']*')\s*$")
# ![alt][ref], whose address is a reference definition elsewhere in the note.
_REFERENCE = re.compile(r"!\[([^\]\n]*)\]\[([^\]\n]*)\]")
_DEFINITION = re.compile(r"^[ ]{0,3}\[([^\]\n]+)\]:\s*<?(\S+?)>?(?:\s.*)?$", re.MULTILINE)
# An HTML element that fetches what one of its attributes names.
_ELEMENT = re.compile(r"<\s*(img|iframe|video|audio|source|embed|object|track|input|image|link)\b[^>]*>", re.IGNORECASE)
_FETCHING = re.compile(
    r"\b(?:src|srcset|data|poster|href|xlink:href|background)\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))", re.IGNORECASE
)
_REMOTE = re.compile(r"^\s*(?:https?:)?//", re.IGNORECASE)


@dataclass(frozen=True)
class Unlinked:
    """A note's text with its remote embeds written as plain links, and the addresses that were."""

    text: str
    addresses: tuple[str, ...]


def unlinked(text: str, sent: frozenset[str]) -> Unlinked:
    """``text`` with every embed of a remote address not among ``sent`` (the person's, normalised by
    :func:`~bot.consent.untrusted.same_address`) written as a plain link."""
    found: list[str] = []

    def foreign(address: str) -> bool:
        if not _REMOTE.match(address):
            return False
        full = address if "://" in address else f"https:{address.strip()}"
        if same_address(full) in sent:
            return False
        found.append(address.strip())
        return True

    def image(match: re.Match[str]) -> str:
        alt, address = match.group(1), _TITLE.sub("", match.group(2)).strip().removeprefix("<").removesuffix(">")
        return f"{alt or 'image'}: {address}" if foreign(address) else match.group()

    references = {key.casefold(): address for key, address in _DEFINITION.findall(text)}

    def reference(match: re.Match[str]) -> str:
        address = references.get((match.group(2) or match.group(1)).casefold(), "")
        return match.group()[1:] if foreign(address) else match.group()  # the same link, not an embed

    def element(match: re.Match[str]) -> str:
        values = [next(v for v in m.groups() if v is not None) for m in _FETCHING.finditer(match.group())]
        remote = [value for value in values if any([foreign(a) for a in _srcset(value)])]
        return " ".join(value.strip() for value in remote) if remote else match.group()

    text = _IMAGE.sub(image, text)
    text = _REFERENCE.sub(reference, text)
    text = _ELEMENT.sub(element, text)
    return Unlinked(text, tuple(dict.fromkeys(found)))


def _srcset(value: str) -> list[str]:
    """The addresses of an attribute's value: one, or each candidate of a ``srcset``."""
    if "," not in value:
        return [value.strip()]
    return [candidate.split()[0] for candidate in value.split(",") if candidate.split()]
