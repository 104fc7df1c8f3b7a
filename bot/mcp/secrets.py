"""The values of a server's ``env`` and ``headers``, and their masking wherever text leaves the server."""

from __future__ import annotations

import logging
import re
from typing import Any

from bot.settings import McpServerSettings

MASK = "***"
# Shorter values ("1", "yes") are not masked: masking them would garble every result that contains them.
SHORTEST_MASKED = 4


class Secrets:
    """Masks a server's secret values (``***``) in text, and in every string of a JSON-like value."""

    def __init__(self, config: McpServerSettings) -> None:
        values: set[str] = set()
        for secret in [*config.env.values(), *config.headers.values()]:
            value = secret.get_secret_value()
            # "Bearer TOKEN": the token alone is as secret as the whole header.
            values |= {value, *value.split()}
        kept = sorted((v for v in values if len(v) >= SHORTEST_MASKED), key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(v) for v in kept)) if kept else None

    def mask(self, text: str) -> str:
        """``text`` with every secret value replaced by ``***``."""
        return self._pattern.sub(MASK, text) if self._pattern is not None else text

    def mask_all(self, value: Any) -> Any:
        """``value`` (dicts, lists, strings) with every string masked."""
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, dict):
            return {self.mask_all(k): self.mask_all(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.mask_all(v) for v in value]
        return value


class MaskingFilter(logging.Filter):
    """Masks the servers' secrets in what the MCP SDK logs: it logs a line a server printed that is
    not JSON-RPC, and that line may be anything the server knows. An exception's text may quote
    such a line cut short (pydantic shows its middle as "..."), where no mask can find a secret, so
    a traceback is reduced to the exception's type. Attach with :meth:`attach`."""

    def __init__(self, secrets: list[Secrets]) -> None:
        super().__init__()
        self._secrets = secrets
        self._loggers: list[logging.Logger] = []

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record's message (and traceback) masked; never drops it."""
        record.msg, record.args = self._mask(record.getMessage()), None
        if record.exc_info:
            kind = record.exc_info[0]
            record.exc_info, record.exc_text = (
                None,
                f"({kind.__name__ if kind else 'an exception'}; details not logged)",
            )
        return True

    def attach(self) -> None:
        """Filter every logger of the SDK (a logger's filters do not reach its children's records)."""
        names = [name for name in logging.root.manager.loggerDict if name == "mcp" or name.startswith("mcp.")]
        self._loggers = [logging.getLogger(name) for name in names]
        for logger in self._loggers:
            logger.addFilter(self)

    def detach(self) -> None:
        """Take the filter off again."""
        for logger in self._loggers:
            logger.removeFilter(self)

    def _mask(self, text: str) -> str:
        for secrets in self._secrets:
            text = secrets.mask(text)
        return text
