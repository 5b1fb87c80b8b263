"""Fixtures shared by every test package: the real embedded model, loaded once per session."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from scorer.model_files import embedded_default

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="session")
def model_path() -> Path:
    """The embedded Gemma 3 270M Q4_K_M GGUF, assembled from its PyPI package (no download)."""
    return embedded_default()
