"""Why a run could not reach the model.

- ``ModelUnavailable``: transient (rate limit, overload, 5xx, timeout, connection, garbage
  response). The bus reschedules the message; ``retry_after`` is the server's hint, if any.
- ``ModelRejected``: permanent (bad key, bad request, spend limit). Retrying cannot help; the
  message says what the user must fix.
- ``DeadLetter``: retrying the message cannot help; the worker dead-letters it at once
  (``ModelDeadLetter`` when the model rejected it).
"""

from __future__ import annotations

from bot.bus import Fatal


class ModelError(Exception):
    """The model could not answer this run."""


class ModelUnavailable(ModelError):
    """The model is unreachable for now; trying later may succeed."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ModelRejected(ModelError):
    """The model refused the request for a reason only the user can fix."""


class DeadLetter(Fatal):
    """Retrying this message cannot help; the worker dead-letters it at once."""


class ModelDeadLetter(DeadLetter):
    """The model refused the request for a reason only the user can fix (``ModelRejected``)."""
