"""Speech to text for recordings that come with messages (voice notes, audio files, video notes)."""

from bot.transcribe.client import TranscriptionClient, build_transcriber
from bot.transcribe.errors import TranscriptionError
from bot.transcribe.voice import Outcome, VoiceNotes

__all__ = ["Outcome", "TranscriptionClient", "TranscriptionError", "VoiceNotes", "build_transcriber"]
