"""The values of a server's ``env`` and ``headers``, and their masking wherever text leaves the server."""

from __future__ import annotations

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
