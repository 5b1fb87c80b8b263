"""The one place that knows the marts' layout and columns: everything else asks this module.

The marts are grouped today by ``model_key`` (``name@sha256[:12]/quantization``, ``'*'`` over all
models); the report speaks of a *candidate* (``CANDIDATE``) and its *identity*, so when the marts move to
``candidate`` + ``model_identity_sha256`` only this module changes. Marts are read from a folder or
``s3://bucket/prefix`` through a pyarrow filesystem (``pipelines.storage``), never row data: the report
holds aggregates only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads

from dashboards.errors import MartsMissing
from pipelines.errors import PipelinesError
from pipelines.storage import open_root

if TYPE_CHECKING:
    from pipelines.storage import Root

CANDIDATE = "candidate"
"""The report's name for the grouping key (today the marts' ``model_key``)."""
ALL = "*"
"""The candidate value that sums every candidate."""
SOURCE_COLUMNS = {"model_key": CANDIDATE}
"""Mart column -> report column; the marts' own names stop here."""
MARTS = (
    "funnel",
    "funnel_reasons",
    "agreement",
    "confusion",
    "reliability",
    "calibration",
    "drift",
    "thresholds",
    "risk_coverage",
    "selective",
    "severe_errors",
    "latency",
    "cost",
)


@dataclass(frozen=True)
class Identity:
    """What is known of a candidate's identity from the marts (more once they carry it)."""

    candidate: str
    model_name: str
    sha256_prefix: str
    quantization: str

    @property
    def label(self) -> str:
        """A readable label: ``name/quantization (sha256 prefix)``."""
        return f"{self.model_name}/{self.quantization} ({self.sha256_prefix})"


def identity_of(candidate: str) -> Identity:
    """Parse a candidate key (``name@sha12/quantization``) into its parts."""
    name, _, rest = candidate.partition("@")
    sha, _, quant = rest.partition("/")
    return Identity(candidate, name, sha, quant)


@dataclass(frozen=True)
class Marts:
    """Every mart the report reads, as pandas frames with the report's column names, weeks up to ``week``."""

    frames: dict[str, pd.DataFrame]
    week: str
    source: str

    def __getitem__(self, mart: str) -> pd.DataFrame:
        return self.frames[mart]

    def of_week(self, mart: str) -> pd.DataFrame:
        """The rows of the review week."""
        frame = self.frames[mart]
        return frame[frame["week"] == self.week]

    def candidates(self, decision_type: str) -> list[str]:
        """The candidates scored for a decision type in the review week (without ``'*'``)."""
        frame = self.of_week("agreement")
        rows = frame[(frame["decision_type"] == decision_type) & (frame[CANDIDATE] != ALL)]
        return sorted(rows[CANDIDATE].unique())

    def decision_types(self) -> list[str]:
        """The decision types with a funnel row in the review week."""
        return sorted(self.of_week("funnel")["decision_type"].unique())

    def identity_changes(self, decision_type: str) -> pd.DataFrame:  # noqa: ARG002  (marts lack it yet)
        """Weeks in which a candidate changed identity: empty until the marts carry ``identity_changes``."""
        return pd.DataFrame(columns=["week", CANDIDATE, "before", "after"])


def read_mart(root: Root, mart: str, week: str) -> pd.DataFrame:
    """One mart's weeks up to and including ``week``; raise ``MartsMissing`` if it is absent."""
    path = root.join(mart)
    try:
        dataset = pads.dataset(path, filesystem=root.fs, format="parquet", partitioning="hive")
        table = dataset.to_table(filter=pads.field("week") <= week)
    except (pa.ArrowException, OSError, FileNotFoundError) as exc:
        raise MartsMissing(f"cannot read mart {mart!r} under {root.uri}: {exc}") from exc
    frame = table.to_pandas().rename(columns=SOURCE_COLUMNS)
    if "week" in frame:
        frame["week"] = frame["week"].astype(str)
    return frame


def load_marts(uri: str, week: str, s3_endpoint: str | None = None, s3_region: str = "us-east-1") -> Marts:
    """Read every mart the report needs from ``uri`` (folder or ``s3://``); check the week is there."""
    try:
        root = open_root(uri, s3_endpoint, s3_region)
    except PipelinesError as exc:
        raise MartsMissing(f"cannot open marts {uri!r}: {exc}") from exc
    frames = {mart: read_mart(root, mart, week) for mart in MARTS}
    if not (frames["funnel"]["week"] == week).any():
        raise MartsMissing(f"no funnel rows for {week} under {uri}")
    return Marts(frames, week, uri)
