"""What a message brings besides the person's words, as the model reads it: a recording's transcript,
someone else's words (a forward, a quote), a document's text, the images it sees."""

from __future__ import annotations

from dataclasses import dataclass

from bot.bus import InboundMessage
from bot.runner.documents import Documents
from bot.runner.others import with_others
from bot.runner.photos import Photos, Seen
from bot.tools import ToolContext
from bot.transcribe import VoiceNotes


@dataclass(frozen=True)
class Inputs:
    """``voice`` transcribes the recordings that come with messages; ``documents`` gives the model the
    text of the documents that do (capture mode files the message without it); ``photos`` shows the
    model the images that come with them."""

    voice: VoiceNotes | None = None
    documents: Documents | None = None
    photos: Photos | None = None

    async def transcribed(self, message: InboundMessage, context: ToolContext) -> str:
        """The message's text, with the transcript of its recording if it brought one."""
        # Off the receiving path: the channel stored the recording and moved on; a crash here re-runs.
        return await self.voice.prepare(message, context) if self.voice else message.text

    async def read(self, message: InboundMessage, context: ToolContext, mode: str) -> tuple[str, Seen]:
        """The text the model reads for ``message`` in ``mode`` (before its stamp) and what it is shown."""
        text = await self.transcribed(message, context)
        text = with_others(text, message, labelled=mode == "assistant")
        if self.documents is not None and mode == "assistant":
            text = await self.documents.prepare(message, text, context)
        seen = Seen()
        if mode == "assistant" and message.images and self.photos is not None:
            seen = await self.photos.show(message.images, context)
            text = "\n".join([text, *seen.lines])
        return text, seen
