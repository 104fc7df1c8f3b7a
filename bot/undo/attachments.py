"""The files a message brought into the vault before its run began: its changes from the start."""

from __future__ import annotations

from bot.bus import InboundMessage
from bot.store import ChangeSet
from vault import Change


def brought(message: InboundMessage) -> ChangeSet:
    """A change set holding the attachments the channel saved for ``message`` (a photo, a recording, a
    document, another file), so undoing its run takes them back with the notes that link them."""
    paths = [*message.images]
    if message.audio is not None:
        paths.append(message.audio.path)
    if message.document is not None:
        paths.append(message.document.path)
    other = message.meta.get("attachment")  # Telegram's one saved file, of any type
    if isinstance(other, str):
        paths.append(other)
    every = message.meta.get("attachments")  # every file a mail brought: the second document, a zip...
    if isinstance(every, list):
        paths.extend(path for path in every if isinstance(path, str))
    return ChangeSet([Change("attachment", path, None, None) for path in dict.fromkeys(paths)])
