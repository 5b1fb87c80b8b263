"""Pipelines fixtures: generated records data with known properties, and one run of every model over it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from pipelines.generate import generate
from pipelines.storage import open_root
from tests.pipelines.harness import AB_FIRST, AB_LAST, AB_PLAN, AS_OF, PLAN, Computed, run_window
from tests.pipelines.reference import Records, load_records

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path



@pytest.fixture(scope="session")
def records_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40,000 generated decisions over five weeks (the last one drifted), written once per session."""
    root = tmp_path_factory.mktemp("records")
    generate(open_root(str(root)), PLAN)
    return root


@pytest.fixture(scope="session")
def computed(records_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Computed]:
    """Every mart over all five weeks, written under a session output folder."""
    run = run_window(records_root, tmp_path_factory.mktemp("marts"))
    yield run
    run.con.close()


@pytest.fixture(scope="session")
def records(records_root: Path) -> Records:
    """The same records read independently: pyarrow and pandas, no DuckDB."""
    return load_records(records_root, AS_OF)


@pytest.fixture(scope="session")
def ab_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two candidates on the same 16,000 decisions over two weeks, with an identity change mid-W45."""
    root = tmp_path_factory.mktemp("ab_records")
    generate(open_root(str(root)), AB_PLAN)
    return root


@pytest.fixture(scope="session")
def ab_computed(ab_root: Path) -> Iterator[Computed]:
    """Every mart over the two-candidate records (not written)."""
    run = run_window(ab_root, None, first=AB_FIRST, last=AB_LAST)
    yield run
    run.con.close()


@pytest.fixture(scope="session")
def ab_records(ab_root: Path) -> Records:
    """The two-candidate records read independently (pyarrow and pandas)."""
    return load_records(ab_root, AS_OF)
