"""Fixtures shared by every test package: the real embedded model and moto's S3 server, once per session."""

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


@pytest.fixture(scope="session")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """A moto S3 server on a free loopback port, with dummy credentials in the environment."""
    with moto_server(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server
