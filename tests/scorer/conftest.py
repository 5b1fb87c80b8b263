"""Scorer fixtures: engines over the real model, with option batching on and off."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from scorer.runtime import LlamaRuntime, RuntimeConfig
from tests.scorer.harness import make_engine

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from scorer.engine import Engine


@pytest.fixture(scope="session")
def engine(model_path: Path) -> Iterator[Engine]:
    """The default engine: options batched into one decode, prefix cache on."""
    eng = make_engine(model_path)
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def engine_single(model_path: Path) -> Iterator[Engine]:
    """An engine that decodes options one at a time (the exact mode)."""
    eng = make_engine(model_path, batch_options=False)
    yield eng
    eng.close()


@pytest.fixture(scope="session")
def ref_rt(model_path: Path) -> Iterator[LlamaRuntime]:
    """A second context with the engines' settings, for the reference scorer (never shares a cache)."""
    rt = LlamaRuntime(RuntimeConfig(model_path=model_path, n_ctx=2048, n_threads=2))
    yield rt
    rt.close()
