"""Dashboards fixtures: marts of generated records (two candidates, the last week drifted), made once."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from dashboards.config import DEFAULTS
from dashboards.marts import load_marts
from dashboards.report import review
from pipelines.generate import generate
from pipelines.storage import open_root
from tests.dashboards.harness import PLAN, WEEK, run_marts

if TYPE_CHECKING:
    from pathlib import Path

    from dashboards.report import Review


@pytest.fixture(scope="session")
def records_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """20,000 generated decisions over 2026-W44..W48 (``PLAN``)."""
    records = tmp_path_factory.mktemp("records")
    generate(open_root(str(records)), PLAN)
    return records


@pytest.fixture(scope="session")
def marts_dir(records_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every mart over 2026-W44..W48 of the generated records."""
    return run_marts(records_dir, tmp_path_factory.mktemp("marts"), "2026-W44", WEEK)


@pytest.fixture(scope="session")
def generated_review(marts_dir: Path) -> Review:
    """The review of the drifted week with the default rules."""
    return review(load_marts(str(marts_dir), WEEK), DEFAULTS)
