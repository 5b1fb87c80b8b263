"""Fixtures shared by every test package: the real embedded model (once per session), moto's server."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from scorer.model_files import embedded_default
from tests.harness import MotoServer, moto_server

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture(scope="session")
def model_path() -> Path:
    """The embedded Gemma 3 270M Q4_K_M GGUF, assembled from its PyPI package (no download)."""
    return embedded_default()


@pytest.fixture(scope="module")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """A moto server of the test module's own (its buckets start empty), with dummy AWS credentials set."""
    with moto_server(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server
