"""One- or two-sentence summaries of long steps, so the audit trail reads quickly.

A cheap, fast model (``model.summary_model``) writes them; the raw content is always kept beside
the summary. Summarising is best effort: a failure or a slow answer leaves the summary empty and
never fails the run.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any

from bot.runner.model import ModelClient, Usage

log = logging.getLogger(__name__)

SUMMARISE_ABOVE = 2_000  # characters of a step's output worth a summary
_SENT_AT_MOST = 20_000  # characters of it sent to the summariser
PROMPT = (
    "You write an audit log of what a personal assistant did. Summarise the following tool result or "
    "model output in one or two plain sentences. Say what it contains; do not add advice."
)


@dataclass(frozen=True)
class Summary:
    """A step's summary, and the model call that wrote it (it costs money too): the model asked
    for, the one that answered, and what it used."""

    text: str
    model: str
    api_model: str
    usage: Usage


class AuditSummarizer:
    """Summarises long step outputs with a small model."""

    def __init__(self, model: ModelClient, *, timeout: float = 20.0) -> None:
        self._model = model
        self._timeout = timeout

    async def close(self) -> None:
        """Release the model's connections."""
        close = getattr(self._model, "close", None)
        if close is not None:
            await close()

    async def summarize(self, output: Any) -> Summary | None:
        """A summary of ``output`` when it is long, else None; None too when summarising fails."""
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
        if len(text) <= SUMMARISE_ABOVE:
            return None
        try:
            reply = await asyncio.wait_for(
                self._model.complete(
                    system=[{"type": "text", "text": PROMPT}],
                    messages=[{"role": "user", "content": text[:_SENT_AT_MOST]}],
                    tools=[],
                ),
                self._timeout,
            )
        except Exception as exc:  # best effort by design: the audit keeps the raw content anyway
            log.info("audit summary skipped: %s", exc)
            return None
        text = reply.text.strip()
        return Summary(text, self._model.name, reply.model, reply.usage) if text else None
