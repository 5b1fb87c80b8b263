"""The marts adapter: the same frames from a folder and from s3:// (moto), the report's vocabulary."""

from __future__ import annotations

from typing import TYPE_CHECKING

import boto3
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from dashboards.errors import MartsMissing
from dashboards.marts import CANDIDATE, MARTS, OPTIONAL_MARTS, identity_of, load_marts, read_mart
from pipelines.storage import open_root
from tests.dashboards.harness import WEEK

if TYPE_CHECKING:
    from pathlib import Path

    from tests.harness import MotoServer


def test_s3_marts_read_the_same_as_local(moto: MotoServer, marts_dir: Path) -> None:
    """Marts copied to a moto bucket load, through pyarrow's S3FileSystem, into the same frames."""
    boto3.client("s3", endpoint_url=moto.endpoint, region_name="us-east-1").create_bucket(Bucket="marts")
    s3 = pafs.S3FileSystem(endpoint_override=moto.endpoint, region="us-east-1")
    for mart in (*MARTS, *OPTIONAL_MARTS):
        pafs.copy_files(str(marts_dir / mart), f"marts/out/{mart}", destination_filesystem=s3)
    local = load_marts(str(marts_dir), WEEK)
    remote = load_marts("s3://marts/out", WEEK, moto.endpoint)
    for mart in (*MARTS, *OPTIONAL_MARTS):
        key = [c for c in ("week", "decision_type", CANDIDATE) if c in local[mart]]
        left = local[mart].sort_values(key, kind="stable").reset_index(drop=True)
        right = remote[mart].sort_values(key, kind="stable").reset_index(drop=True)
        assert left.equals(right[left.columns]), mart


def test_the_grouping_key_is_renamed_and_parsed(marts_dir: Path) -> None:
    """`model_key` reaches the report as `candidate`; its parts parse; every identity its own candidate."""
    marts = load_marts(str(marts_dir), WEEK)
    assert "model_key" not in marts["agreement"]
    for decision_type in marts.decision_types():
        candidates = marts.candidates(decision_type)
        assert len(candidates) >= 2
        assert {identity_of(c).quantization for c in candidates} == {"Q4_K_M", "Q8_0"}
        assert all(identity_of(c).device in {"cpu", "cuda"} for c in candidates)


def test_a_missing_folder_or_week_is_one_error(marts_dir: Path, tmp_path: Path) -> None:
    """No marts, or no rows for the week: MartsMissing naming it."""
    with pytest.raises(MartsMissing, match="funnel"):
        load_marts(str(tmp_path), WEEK)
    with pytest.raises(MartsMissing, match="unsupported scheme"):
        load_marts("gs://bucket/marts", WEEK)
    with pytest.raises(MartsMissing, match="2030-W01"):
        load_marts(str(marts_dir), "2030-W01")


def test_marts_of_an_older_pipelines_lack_the_identity_marts(marts_dir: Path, tmp_path: Path) -> None:
    """Without `identities`, `identity_changes` and `paired` the review still loads: they read as empty."""
    old = tmp_path / "old"
    for mart in MARTS:
        pafs.copy_files(str(marts_dir / mart), str(old / mart))
    marts = load_marts(str(old), WEEK)
    decision_type = marts.decision_types()[0]
    assert marts.identity_changes(decision_type).empty
    assert marts.identities(decision_type).empty
    assert marts.of_week("paired").empty


@pytest.mark.parametrize(("mart", "old", "missing"), [
    ("agreement", {"accuracy": [0.9], "baseline_accuracy": [0.5]}, "agreement, baseline_agreement"),
    ("reliability", {"bin": [0], "accuracy": [0.9]}, "agreement"),
])
def test_marts_written_before_the_agreement_column_are_refused_in_one_line(
        tmp_path: Path, mart: str, old: dict[str, list[object]], missing: str) -> None:
    """A mart whose agreement column is still ``accuracy`` is ``MartsMissing``: rerun the pipelines."""
    folder = tmp_path / mart / f"week={WEEK}"
    folder.mkdir(parents=True)
    pq.write_table(pa.table({"decision_type": ["t"], **old}), folder / "part-0.parquet")
    with pytest.raises(MartsMissing, match=rf"no {missing}: .*\(rerun `semif-shadow"):
        read_mart(open_root(str(tmp_path)), mart, WEEK)
