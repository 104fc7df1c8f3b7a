"""Why a recording could not be transcribed.

:class:`TranscriptionError` carries a sentence fragment a user can act on (never the API key, never a
raw exception), whether another attempt may help, and how long the service asked us to wait.
"""

from __future__ import annotations


class TranscriptionError(Exception):
    """One transcription request failed. ``retryable``: a later attempt may succeed (a timeout, a 5xx,
    a 429); otherwise retrying cannot help (a refused key, a refused file). ``retry_after``: the
    seconds the service asked for (HTTP ``Retry-After``), if it said; ``status``: the HTTP status, when
    the service answered."""

    def __init__(
        self, reason: str, *, retryable: bool, retry_after: float | None = None, status: int | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
