"""An OpenAI-compatible speech-to-text client: ``POST {base_url}/audio/transcriptions`` with the
recording as multipart ``file`` and ``model``, the key as a bearer token; the transcript is the
``text`` field of the JSON answer. OpenAI, Groq and local (faster-)whisper servers speak it.

Every failure becomes a :class:`TranscriptionError` whose reason never contains the key, even when
the service quotes it back in an error message.
"""

from __future__ import annotations

import mimetypes
from typing import Any

import httpx

from bot.settings import Settings
from bot.transcribe.errors import TranscriptionError

# The answer's error message is quoted to the user, cut to this many characters.
MAX_QUOTED = 160
# Statuses after which the same request may well succeed.
RETRYABLE = {408, 409, 425, 429}


class TranscriptionClient:
    """Talks to one endpoint. Open once, :meth:`close` at the end."""

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        model: str,
        timeout: float,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.model = model
        self._key = api_key
        self._timeout = timeout
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/") + "/", headers=headers, timeout=timeout, transport=transport
        )

    async def transcribe(self, audio: bytes, filename: str) -> str:
        """The words spoken in ``audio`` (``filename``'s extension tells the service its format)."""
        mime = mimetypes.guess_type(filename)[0] or "application/octet-stream"
        response = await self._send(
            "POST", "audio/transcriptions", files={"file": (filename, audio, mime)}, data={"model": self.model}
        )
        try:
            text = response.json()["text"]
        except (ValueError, KeyError, TypeError):
            text = None
        if not isinstance(text, str):
            raise TranscriptionError("the service's answer had no transcript in it", retryable=True)
        return text.strip()

    async def models(self) -> list[str] | None:
        """The model ids the endpoint offers (``GET {base_url}/models``): free, and it needs the key, so
        it tells whether the service is reachable and the key accepted. None: the endpoint has no list
        (a 404 is raised: at an address without its version it means the service is not there either)."""
        try:
            response = await self._send("GET", "models")
        except TranscriptionError as exc:
            if exc.status == 405:
                return None
            raise
        try:
            return [str(m["id"]) for m in response.json()["data"]]
        except (ValueError, KeyError, TypeError):
            return None

    async def close(self) -> None:
        """Release the connections."""
        await self._http.aclose()

    async def _send(self, method: str, path: str, **request: Any) -> httpx.Response:
        try:
            response = await self._http.request(method, path, **request)
        except httpx.TimeoutException:
            raise TranscriptionError(f"the service did not answer within {self._timeout:g} s", retryable=True) from None
        except httpx.HTTPError as exc:
            # The exception names the URL at most; its class says what went wrong.
            raise TranscriptionError(
                f"the service could not be reached ({type(exc).__name__})", retryable=True
            ) from None
        if response.is_success:
            return response
        raise self._failure(response)

    def _failure(self, response: httpx.Response) -> TranscriptionError:
        status = response.status_code
        said = self._redact(_message_in(response))
        quoted = f": {said}" if said else ""
        if status in (401, 403):
            return TranscriptionError(
                f"the service refused the API key (HTTP {status}{quoted}); check VAULTBOT_TRANSCRIBE__API_KEY",
                retryable=False,
                status=status,
            )
        if status == 404:
            return TranscriptionError(
                f"the service has no such endpoint (HTTP 404{quoted}); check VAULTBOT_TRANSCRIBE__BASE_URL",
                retryable=False,
                status=status,
            )
        retryable = status in RETRYABLE or status >= 500
        what = "the service failed" if retryable else "the service refused the recording"
        return TranscriptionError(
            f"{what} (HTTP {status}{quoted})", retryable=retryable, retry_after=_retry_after(response), status=status
        )

    def _redact(self, text: str) -> str:
        return text.replace(self._key, "[the API key]") if self._key else text


def _message_in(response: httpx.Response) -> str:
    """The error message of an OpenAI-style answer (``{"error": {"message": …}}``), one line, cut short."""
    try:
        body = response.json()
    except (ValueError, UnicodeDecodeError):
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
    if not isinstance(message, str):
        return ""
    line = " ".join(message.split())
    return line if len(line) <= MAX_QUOTED else line[: MAX_QUOTED - 1] + "…"


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:  # an HTTP date: rare for these services; the backoff applies instead
        return None


def build_transcriber(settings: Settings, *, timeout: float | None = None) -> TranscriptionClient | None:
    """The transcription service's client, when one is configured (``timeout`` replaces the setting's)."""
    config = settings.transcribe
    if not config.enabled:
        return None
    return TranscriptionClient(
        base_url=config.endpoint,
        api_key=config.api_key.get_secret_value() if config.api_key else None,
        model=config.model,
        timeout=timeout or config.timeout,
    )


__all__ = ["TranscriptionClient", "build_transcriber"]
