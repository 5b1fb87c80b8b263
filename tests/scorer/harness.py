"""Plain helpers of the scorer tests (data, runs, servers), imported where used.

`conftest.py` beside it keeps the fixtures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scorer.engine import Engine
from scorer.settings import ScorerSettings

if TYPE_CHECKING:
    from pathlib import Path


def make_engine(model_path: Path, **overrides: object) -> Engine:
    """An engine over the real model with test-sized settings."""
    values: dict[str, object] = {"model_path": model_path, "n_threads": 2, "n_ctx": 2048, **overrides}
    return Engine.from_settings(ScorerSettings.model_validate(values))
