"""What a model call costs: a price table per model, shipped in ``bot/defaults/pricing.toml``, with the
entries of the user's own file (``config/pricing.toml``, untracked) on top.

Prices are US dollars per million tokens. A model missing from the table is priced at the highest
price of each kind in it, so an unknown model is never counted as free or cheap; ``vaultbot doctor``
names such models.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from bot.runner.model import Usage
from bot.settings import SettingsError

__all__ = ["Price", "PriceTable", "PricingError", "load_prices"]

_MILLION = 1_000_000
# A dated snapshot id ("claude-sonnet-4-5-20250929") or an alias ("…-latest") names its family.
_SUFFIX = re.compile(r"-(\d{8}|latest)$")


class PricingError(SettingsError):
    """The pricing file cannot be used; the message names the file and the problem."""


class Price(BaseModel):
    """Dollars per million tokens of each kind."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_write: float = Field(ge=0)
    cache_read: float = Field(ge=0)


class _File(BaseModel):
    model_config = ConfigDict(extra="forbid")

    models: dict[str, Price] = Field(default_factory=dict)


@dataclass(frozen=True)
class PriceTable:
    """Prices by model name, and the fallback for models not in the table."""

    prices: dict[str, Price]

    def find(self, model: str) -> Price | None:
        """The price of ``model`` (a dated id is matched to its family entry), or None."""
        return self.prices.get(model) or self.prices.get(_SUFFIX.sub("", model))

    def knows(self, model: str) -> bool:
        """True when ``model`` has a price of its own."""
        return self.find(model) is not None

    @cached_property
    def highest(self) -> Price:
        """The highest price of each kind: what an unknown model is counted at (worked out once: a
        table is built whole by :func:`load_prices` and never changed)."""
        values = list(self.prices.values())
        return Price(
            input=max((p.input for p in values), default=0.0),
            output=max((p.output for p in values), default=0.0),
            cache_write=max((p.cache_write for p in values), default=0.0),
            cache_read=max((p.cache_read for p in values), default=0.0),
        )

    def cost(self, usage: Usage, *models: str) -> float:
        """Dollars for one call's ``usage``, at the price of the first of ``models`` in the table
        (the name the API answered with, then the name asked for), else the highest price."""
        price = next((p for p in map(self.find, models) if p is not None), None) or self.highest
        return (
            usage.input_tokens * price.input
            + usage.output_tokens * price.output
            + usage.cache_creation_input_tokens * price.cache_write
            + usage.cache_read_input_tokens * price.cache_read
        ) / _MILLION


def load_prices(path: Path) -> PriceTable:
    """The built-in table with the entries of the user's file at ``path`` (if it exists) on top."""
    builtin = resources.files("bot").joinpath("defaults/pricing.toml").read_text(encoding="utf-8")
    prices = _parse(builtin, "the built-in pricing table")
    if path.is_file():
        prices.update(_parse(path.read_text(encoding="utf-8"), str(path)))
    return PriceTable(prices)


def _parse(text: str, source: str) -> dict[str, Price]:
    try:
        return _File.model_validate(tomllib.loads(text)).models
    except tomllib.TOMLDecodeError as exc:
        raise PricingError(f"{source} is not valid TOML: {exc}") from None
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"])
        raise PricingError(f"{source}: {where}: {err['msg']}") from None
