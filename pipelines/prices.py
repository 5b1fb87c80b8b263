"""The dated price table (``prices.yaml``): hourly instance prices and per-token prices, overridable."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import yaml
from pydantic import BaseModel, Field, ValidationError

from pipelines.errors import PriceTableError


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
    overrides: dict[str, float] = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        try:
            if not sep or not name:
                raise ValueError(spec)
            overrides[name] = float(value)
        except ValueError as exc:
            raise PriceTableError(f"--price wants INSTANCE_TYPE=USD_PER_HOUR, got {spec!r}") from exc
    return overrides
