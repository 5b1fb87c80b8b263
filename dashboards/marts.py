"""The one place that knows the marts' layout and columns: everything else asks this module.

The quality marts are grouped by ``model_key``: ``<candidate> <model>/<quant>/<device>/<normalization>
#<identity sha12>`` for records v1.1 rows, ``name@sha256[:12]/quantization`` for v1 rows, ``'*'`` over
all; the report calls it the *candidate* (``CANDIDATE``) and shows its *identity*, so a change of the
marts' key changes only this module. Marts are read from a folder or
``s3://bucket/prefix`` through a pyarrow filesystem (``pipelines.storage``), never row data: the report
holds aggregates only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs

from dashboards.errors import MartsMissing
from pipelines.errors import PipelinesError
from pipelines.storage import open_root

if TYPE_CHECKING:
    from pipelines.storage import Root

CANDIDATE = "candidate"
"""The report's name for the grouping key (today the marts' ``model_key``)."""
ALL = "*"
"""The candidate value that sums every candidate."""
CANDIDATE_NAME = "candidate_name"
"""The candidate's own name (``default``, ``challenger``): the marts' ``candidate`` column."""
READ_COLUMNS = {"agreement": ("agreement", "baseline_agreement"), "reliability": ("agreement",)}
"""Columns the review reads that marts written by an older pipelines name otherwise: such marts are refused
in one line (rerun the pipelines) instead of failing deep in the report."""
SOURCE_COLUMNS = {"candidate": CANDIDATE_NAME, "model_key": CANDIDATE}
"""Mart column -> report column (applied in this order); the marts' own names stop here."""
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
    "latency",
    "cost",
)
# Not read: `severe_errors` lists decisions (it grows with them); the verdict takes its count from
# `agreement`. `gallery` lists decisions too, at most 50 per type, week and identity (the review's gallery).
OPTIONAL_MARTS = (
    "identities",
    "identity_changes",
    "paired",
    "evidence",
    "label_delay",
    "correctness",
    "audit_strata",
    "audited_difference",
    "auditor_agreement",
    "gallery",
)
"""Marts of records v1.1 runs: read as empty frames from an older pipelines' output."""


@dataclass(frozen=True)
class Identity:
    """What the grouping key tells of a candidate and its identity."""

    candidate: str
    model_name: str
    sha256_prefix: str
    quantization: str
    device: str = ""
    normalization: str = ""
    name: str = ""
    """The candidate's name in the catalog (``default``, ``challenger``); records v1 keys have none."""

    @property
    def label(self) -> str:
        """A readable label: ``[candidate: ]model/quantization[/device/normalization] (sha256 prefix)``."""
        parts = [self.model_name, self.quantization, self.device, self.normalization]
        named = f"{self.name}: " if self.name else ""
        return f"{named}{'/'.join(p for p in parts if p)} ({self.sha256_prefix})"


def identity_of(candidate: str) -> Identity:
    """Parse a grouping key.

    Records v1.1: ``<candidate> <model>/<quant>/<device>/<norm> #<sha12>``; v1: ``name@sha12/quantization``.
    """
    if " #" in candidate:
        head, _, sha = candidate.rpartition(" #")
        name, _, spec = head.partition(" ")
        model, quant, device, norm = ([*spec.split("/"), "", "", "", ""])[:4]
        return Identity(candidate, model, sha, quant, device, norm, name)
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

    def of_week_if_built(self, mart: str) -> pd.DataFrame | None:
        """The review week's rows of an optional mart (None when the marts were built without it)."""
        return self.of_week(mart) if mart in self.frames else None

    def candidates(self, decision_type: str) -> list[str]:
        """The candidates scored for a decision type in the review week (without ``'*'``)."""
        frame = self.of_week("agreement")
        rows = frame[(frame["decision_type"] == decision_type) & (frame[CANDIDATE] != ALL)]
        return sorted(rows[CANDIDATE].unique())

    def decision_types(self) -> list[str]:
        """The decision types with a funnel row in the review week."""
        return sorted(self.of_week("funnel")["decision_type"].unique())

    def identities(self, decision_type: str) -> pd.DataFrame:
        """The identities scored in the review week: key, parts, first and last seen, decisions scored."""
        frame = self.of_week("identities")
        if frame.empty:
            return frame
        columns = [CANDIDATE, CANDIDATE_NAME, "model_identity_sha256", "first_seen", "last_seen", "scored"]
        rows = frame[frame["decision_type"] == decision_type][columns]
        return rows.sort_values(CANDIDATE).reset_index(drop=True)

    def identity_changes(self, decision_type: str) -> pd.DataFrame:
        """Identity changes in the review week, one row per changed field (empty without the mart)."""
        frame = self.of_week("identity_changes")
        columns = [
            CANDIDATE_NAME,
            "changed_at",
            "from_identity_sha256",
            "to_identity_sha256",
            "field",
            "before",
            "after",
        ]
        if frame.empty:
            return pd.DataFrame(columns=columns)
        rows = frame[frame["decision_type"] == decision_type][columns]
        return rows.sort_values(["changed_at", "field"]).reset_index(drop=True)


def row_of(frame: pd.DataFrame, decision_type: str, candidate: str) -> pd.Series | None:
    """The first row of one decision type and candidate (None without one)."""
    rows = frame[(frame["decision_type"] == decision_type) & (frame[CANDIDATE] == candidate)]
    return None if rows.empty else rows.iloc[0]


def is_missing(value: object) -> bool:
    """A cell with no value: None or NaN."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def count_of(row: pd.Series | None, column: str) -> int:
    """A count cell as an int (0 without a row or a value)."""
    return 0 if row is None or is_missing(row[column]) else int(row[column])


def has_value(row: pd.Series | None, column: str) -> bool:
    """Whether the row has the column (an older pipelines version may lack it) with a value in it."""
    return row is not None and column in row.index and not is_missing(row[column])


def read_mart(root: Root, mart: str, week: str, *, optional: bool = False) -> pd.DataFrame:
    """One mart's weeks up to and including ``week``; raise ``MartsMissing`` if it is absent.

    ``optional``: an absent mart is an empty frame instead.
    """
    path = root.join(mart)
    if optional and root.fs.get_file_info(path).type != pafs.FileType.Directory:
        return pd.DataFrame(columns=["decision_type", "week"])
    try:
        dataset = pads.dataset(path, filesystem=root.fs, format="parquet", partitioning="hive")
        table = dataset.to_table(filter=pads.field("week") <= week)
    except (pa.ArrowException, OSError, FileNotFoundError) as exc:
        raise MartsMissing(f"cannot read mart {mart!r} under {root.uri}: {exc}") from exc
    if missing := [c for c in READ_COLUMNS.get(mart, ()) if c not in table.column_names]:
        raise MartsMissing(f"mart {mart!r} under {root.uri} has no {', '.join(missing)}: it was written by "
                           "an older pipelines version (rerun `semif-shadow pipelines run` over its weeks)")
    frame = table.to_pandas()
    for source, column in SOURCE_COLUMNS.items():
        frame = frame.rename(columns={source: column})
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
    frames |= {mart: read_mart(root, mart, week, optional=True) for mart in OPTIONAL_MARTS}
    if not (frames["funnel"]["week"] == week).any():
        raise MartsMissing(f"no funnel rows for {week} under {uri}")
    return Marts(frames, week, uri)
