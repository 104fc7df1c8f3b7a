"""Recordings that come with messages become words the model reads and the vault keeps.

The channel has already stored the recording in the vault before the message reached the bus, so
nothing here can lose it. The runner calls :meth:`VoiceNotes.prepare` before the model (or capture
mode) sees the message: within the limits, the recording is sent to the transcription service,
retried with backoff on failures that may pass; the outcome (the transcript, or why there is none) is
kept in the ``transcripts`` table, keyed by the recording's vault path, so a re-run after a crash
reuses it: one request per recording unless it fails, and the user is told of a problem once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path

from bot.backoff import Backoff
from bot.bus import Audio, Bus, InboundMessage
from bot.db import Database, now_iso
from bot.settings import TranscribeSettings
from bot.store import Store
from bot.tools import ToolContext, queue_notice
from bot.transcribe.client import TranscriptionClient
from bot.transcribe.errors import TranscriptionError

log = logging.getLogger(__name__)

NOT_CONFIGURED = "no transcription service is configured (see “Voice notes” in the README)"


@dataclass(frozen=True)
class Outcome:
    """What transcribing one recording came to. ``status``: transcribed, failed, too_long, too_big,
    or off (no service configured; never stored). ``detail`` says why there is no transcript."""

    status: str
    text: str = ""
    detail: str = ""
    attempts: int = 0
    duration_ms: float = 0.0
    reused: bool = False


class VoiceNotes:
    """Transcribes the recordings of inbound messages, once each. ``client`` None: transcription is off."""

    def __init__(
        self,
        *,
        db: Database,
        bus: Bus,
        store: Store,
        vault_root: Path,
        settings: TranscribeSettings,
        client: TranscriptionClient | None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._db = db
        self._bus = bus
        self._store = store
        self._root = vault_root
        self._settings = settings
        self._client = client
        self._sleep = sleep

    async def prepare(self, message: InboundMessage, context: ToolContext) -> str:
        """The message's text with its recording's transcript (or why there is none) added.

        Idempotent: the outcome is looked up before anything is sent, the audit step belongs to this
        run, and the notice to the user is keyed by the inbound message."""
        audio = message.audio
        if audio is None:
            return message.text
        outcome = await self.outcome(audio)
        await self._store.add_step(
            context.run_id,
            kind="event",
            name="transcription",
            input={"audio": audio.path, "duration": audio.duration},
            output={
                "status": outcome.status,
                "chars": len(outcome.text),
                "detail": outcome.detail,
                "attempts": outcome.attempts,
                "reused": outcome.reused,
            },
            is_error=outcome.status == "failed",
            duration_ms=outcome.duration_ms,
        )
        notice = _notice(audio, outcome)
        if notice is not None:
            await queue_notice(self._bus, context, notice, key="transcription")
            if not outcome.reused:  # in `vaultbot log` once, like the notice
                summary = f"{audio.noun.capitalize()} {audio.path} filed without a transcript: {outcome.detail}"
                await self._store.add_interaction(
                    conversation=context.conversation, category="transcription", summary=summary, run_id=context.run_id
                )
        return f"{message.text}\n{_words(audio, outcome)}" if message.text else _words(audio, outcome)

    async def outcome(self, audio: Audio) -> Outcome:
        """The stored outcome for ``audio``, else a fresh one (stored before it is returned)."""
        if self._client is None:
            return Outcome("off", detail=NOT_CONFIGURED)
        row = await self._db.fetchone(
            "SELECT status, text, detail, attempts, duration_ms FROM transcripts WHERE audio = ?", (audio.path,)
        )
        if row is not None:
            return Outcome(row["status"], row["text"], row["detail"], row["attempts"], row["duration_ms"], reused=True)
        started = time.perf_counter()
        outcome = await self._obtain(audio, self._client)
        outcome = replace(outcome, duration_ms=(time.perf_counter() - started) * 1000)
        await self._db.execute(
            "INSERT INTO transcripts (audio, status, text, detail, attempts, duration_ms, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (audio) DO NOTHING",
            (
                audio.path,
                outcome.status,
                outcome.text,
                outcome.detail,
                outcome.attempts,
                outcome.duration_ms,
                now_iso(),
            ),
        )
        log.info(
            "transcription %s: %s after %d attempt(s), %.0fms, %d chars",
            audio.path,
            outcome.status,
            outcome.attempts,
            outcome.duration_ms,
            len(outcome.text),
        )
        return outcome

    async def _obtain(self, audio: Audio, client: TranscriptionClient) -> Outcome:
        limits = self._settings
        if audio.duration is not None and audio.duration > limits.max_seconds:
            return Outcome(
                "too_long",
                detail=f"it is {_clock(audio.duration)} long, over the {_clock(limits.max_seconds)} limit "
                "(VAULTBOT_TRANSCRIBE__MAX_SECONDS)",
            )
        try:
            data = await asyncio.to_thread((self._root / audio.path).read_bytes)
        except OSError as exc:
            return Outcome("failed", detail=f"its file could not be read from the vault ({exc.strerror})")
        if len(data) > limits.max_bytes:
            return Outcome(
                "too_big",
                detail=f"it is {_megabytes(len(data))}, over the {_megabytes(limits.max_bytes)} limit "
                "(VAULTBOT_TRANSCRIBE__MAX_BYTES)",
            )
        return await self._with_retries(audio, data, client)

    async def _with_retries(self, audio: Audio, data: bytes, client: TranscriptionClient) -> Outcome:
        limits = self._settings
        attempt = 0
        while True:
            attempt += 1
            try:
                text = await client.transcribe(data, upload_name(audio.path))
            except TranscriptionError as exc:
                log.warning("transcription %s: attempt %d failed: %s", audio.path, attempt, exc.reason)
                if not exc.retryable:
                    return Outcome("failed", detail=exc.reason, attempts=attempt)
                if attempt >= limits.attempts:
                    return Outcome("failed", detail=f"{exc.reason}, {attempt} times", attempts=attempt)
                backoff = Backoff(limits.backoff_seconds, limits.backoff_max_seconds).delay(attempt)
                await self._sleep(min(limits.backoff_max_seconds, max(backoff, exc.retry_after or 0.0)))
                continue
            return Outcome("transcribed", text=text, attempts=attempt)


def upload_name(path: str) -> str:
    """The file name sent with a recording: its own, with Ogg/Opus spellings that OpenAI refuses
    (``.oga``, ``.opus``) given the ``.ogg`` it takes; services tell the format by the extension."""
    name = Path(path)
    return name.with_suffix(".ogg").name if name.suffix.lower() in (".oga", ".opus") else name.name


def _words(audio: Audio, outcome: Outcome) -> str:
    """What the model (and a note filed in capture mode) reads about the recording."""
    if outcome.status != "transcribed":
        return f"(This {audio.noun} was filed without a transcript: {outcome.detail}.)"
    if not outcome.text:
        return f"(This {audio.noun} was transcribed, but no speech was found in it.)"
    return f"[Transcript of my {audio.noun}, my own words, spoken:]\n{outcome.text}"


def _notice(audio: Audio, outcome: Outcome) -> str | None:
    """The one line the user is told when a recording could not be transcribed (None: nothing to tell)."""
    if outcome.status in ("transcribed", "off"):
        return None
    return (
        f"I could not transcribe your {audio.noun}: {outcome.detail}. It is kept at {audio.path}, without a transcript."
    )


def _clock(seconds: float) -> str:
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}:{rest:02d} min" if minutes else f"{rest} s"


def _megabytes(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"
