"""Run ids as a person sees them.

A run's id is 32 hex characters; the runs table, the review page, replies and log lines show its
first :data:`SHOWN`, enough to be unique in one person's history. Every command that takes a run id
(``vaultbot runs show``, ``vaultbot retry``) takes any unique prefix of :data:`MIN_PREFIX` or more.
"""

from __future__ import annotations

__all__ = ["MIN_PREFIX", "SHOWN", "short_id"]

MIN_PREFIX = 6
SHOWN = 8


def short_id(run_id: str) -> str:
    """A run's id as a person sees it."""
    return run_id[:SHOWN]
