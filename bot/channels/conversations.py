"""Which bus conversation a chat, an address or a terminal is: the channel's name, then who or where."""

from __future__ import annotations

__all__ = ["conversation_id"]


def conversation_id(channel: str, *where: object) -> str:
    """``telegram:12345``, ``email:ann@example.org``, ``terminal:ann:2``: one conversation per
    ``where`` on ``channel``, the same every time, so a conversation's history is found again."""
    return ":".join([channel, *map(str, where)])
