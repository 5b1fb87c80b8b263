"""Today's models write every mart of the kept run exactly as the snapshot holds it (``snapshot.py``).

The snapshot's marts were computed by the models before a change that meant to keep them; this test runs
today's models on the same generated records (three candidates, audits, an identity change, a drifted and
an immature week, the catalog's high-consequence options and two policies) and compares table by table:
the same files, the same rows, counts exact, floats within 1e-9 relative. A change that means to alter a
mart rewrites the snapshot (``python -m tests.pipelines.snapshot --write``, in ``snapshot.py``).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest

from pipelines.sqlmodels import mart_names
from tests.pipelines import snapshot
from tests.pipelines.marts_equal import mart_files, unequal_marts

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="module", params=["one pass", "a pass per type"])
def today(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The snapshot's run again, on freshly generated records, with this checkout's models.

    Once as one pass over every decision type, once with each type a pass of its own
    (``PIPELINES_PASS_MB=0``).
    """
    root = snapshot.records(tmp_path_factory.mktemp("snapshot_records"))
    out = tmp_path_factory.mktemp("snapshot_marts")
    env = {"PIPELINES_PASS_MB": "0"} if request.param == "a pass per type" else {}
    snapshot.run(None, root, out, snapshot.SNAPSHOT / "inputs", env)
    return out


def test_every_mart_file_is_written_as_kept(today: Path) -> None:
    """The same mart files: every mart, every target week (a new mart needs the snapshot rewritten)."""
    kept = mart_files(snapshot.SNAPSHOT)
    assert mart_files(today) == kept
    assert {f.parts[0] for f in kept} == set(mart_names())
    assert len({f.parts[1] for f in kept}) == 4  # 2026-W45..W48


def test_every_mart_equals_the_snapshot_table_by_table(today: Path) -> None:
    """Each mart's rows equal the kept ones: three candidates' pairs, the audits, the policies' evidence."""
    unequal = unequal_marts(snapshot.SNAPSHOT, today)
    assert not unequal, unequal
    rows: Counter[str] = Counter()
    for f in mart_files(today):
        rows[f.parts[0]] += pq.read_metadata(today / f).num_rows
    assert all(rows.values()), [m for m, n in rows.items() if not n]  # every mart compared real rows
