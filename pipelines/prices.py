"""The dated price table (``prices.yaml``): hourly instance prices and per-token prices, overridable."""

from __future__ import annotations

import datetime as dt  # noqa: TC003  (pydantic resolves the field types at run time)
from typing import TYPE_CHECKING

import yaml
from pydantic import BaseModel, Field, ValidationError

from pipelines.errors import PriceTableError

if TYPE_CHECKING:
    from pathlib import Path


class TokenPrice(BaseModel):
    """USD per million prompt tokens, uncached and cached."""

    input_per_mtok: float = Field(ge=0)
    cached_input_per_mtok: float = Field(ge=0)


class PriceTable(BaseModel):
    """Prices valid on ``date``, with where they came from."""

    date: dt.date
    source: str
    region: str
    instances: dict[str, float] = Field(default_factory=dict)
    tokens: dict[str, TokenPrice] = Field(default_factory=dict)

    def with_overrides(self, overrides: dict[str, float]) -> PriceTable:
        """A copy with some hourly instance prices replaced (``--price TYPE=USD``)."""
        return self.model_copy(update={"instances": self.instances | overrides})


def load_prices(path: Path) -> PriceTable:
    """Read and validate the price table; ``PriceTableError`` if it is missing or malformed."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        return PriceTable.model_validate(raw)
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise PriceTableError(f"price table {path}: {exc}") from exc


def parse_overrides(specs: tuple[str, ...]) -> dict[str, float]:
    """``('ml.g6e.xlarge=2.5', ...)`` as a mapping; ``PriceTableError`` on a bad entry."""
    return dict(_parse_override(spec) for spec in specs)


def _parse_override(spec: str) -> tuple[str, float]:
    name, sep, value = spec.partition("=")
    try:
        price = float(value)
    except ValueError:
        price = -1.0
    if not sep or not name or price < 0:
        raise PriceTableError(f"--price wants INSTANCE_TYPE=USD_PER_HOUR, got {spec!r}")
    return name, price
