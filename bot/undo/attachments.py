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
    paths += [attachment.path for attachment in message.attachments]  # every file, of any type
    return ChangeSet([Change("attachment", path, None, None) for path in dict.fromkeys(paths)])
