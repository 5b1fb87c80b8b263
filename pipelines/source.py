"""The raw relations.

Records-v1 files of the read window, registered in DuckDB as ``raw_proposals`` and ``raw_outcomes``.
Partitions are pruned by their ``date=`` folder before anything is opened. The files are kept by decision
type so that the one large join (``int_decisions``) can be built one type at a time.

Local roots are read by DuckDB's own Parquet reader; ``s3://`` roots through a pyarrow dataset that
DuckDB scans (DuckDB cannot download its httpfs extension here). Both use the records-v1 schema
from ``shadow.records.schema`` and fail with ``SchemaMismatch`` on a file that does not follow it.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs

from pipelines.errors import NoInput, SchemaMismatch
from shadow.records.schema import OUTCOMES, PROPOSALS

if TYPE_CHECKING:
    from pipelines.storage import Root

SCHEMAS = {"proposals": PROPOSALS, "outcomes": OUTCOMES}


def _children(root: Root, path: str, prefix: str) -> list[tuple[str, str]]:
    """``(value, path)`` of the ``prefix=value`` folders directly under ``path``."""
    infos = root.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return sorted(
        (info.base_name.removeprefix(prefix), info.path)
        for info in infos
        if info.type == pafs.FileType.Directory and info.base_name.startswith(prefix)
    )


def list_files(
    root: Root, dataset: str, first: dt.date, last: dt.date
) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Complete Parquet files of ``dataset`` in ``date=`` partitions ``first..last``, and bytes, by type."""
    files: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    lo, hi = first.isoformat(), last.isoformat()
    for decision_type, type_dir in _children(root, root.join(dataset), "decision_type="):
        for date, date_dir in _children(root, type_dir, "date="):
            if lo <= date <= hi:
                infos = sorted(
                    (
                        i
                        for i in root.fs.get_file_info(pafs.FileSelector(date_dir))
                        if i.type == pafs.FileType.File
                        and i.base_name.endswith(".parquet")
                        and not i.base_name.startswith(".")
                    ),
                    key=lambda i: i.path,
                )
                files.setdefault(decision_type, []).extend(i.path for i in infos)
                sizes[decision_type] = sizes.get(decision_type, 0) + sum(i.size or 0 for i in infos)
    return files, sizes


@dataclass(frozen=True)
class WindowFiles:
    """The window's proposals and outcomes files, by decision type (the join key holds the type)."""

    root: Root
    proposals: dict[str, list[str]]
    outcomes: dict[str, list[str]]
    proposal_bytes: dict[str, int] = field(default_factory=dict)
    """Bytes of each type's proposals files: the size of its share of the join."""

    def counts(self) -> dict[str, int]:
        """How many files each dataset has."""
        return {name: sum(map(len, files.values())) for name, files in self.datasets().items()}

    def datasets(self) -> dict[str, dict[str, list[str]]]:
        """``{"proposals": ..., "outcomes": ...}``."""
        return {"proposals": self.proposals, "outcomes": self.outcomes}

    def types_largest_first(self) -> list[str]:
        """The decision types with proposals, most proposal bytes first (ties by name).

        Built in this order, the largest type's join runs while the decision table is still empty: at 10M
        decisions (6M of one type, 4M of the other), this order together with ``latency`` built before
        ``int_decisions`` took the job's peak RSS from 1,860 to 1,719 MiB.
        """
        return sorted(self.proposals, key=lambda t: (-self.proposal_bytes.get(t, 0), t))

    def chosen(self, decision_type: str | None = None) -> dict[str, list[str]]:
        """Each dataset's files, of every type (in type order) or of one type."""
        return {
            name: [f for t in sorted(files) if decision_type in (None, t) for f in files[t]]
            for name, files in self.datasets().items()
        }

    def register(self, con: duckdb.DuckDBPyConnection, decision_type: str | None = None) -> None:
        """Register ``raw_proposals`` and ``raw_outcomes`` over every type's files, or over one type's."""
        for name, files in self.chosen(decision_type).items():
            register(con, self.root, name, files)

    def check(self) -> None:
        """Every file must follow records-v1 (``SchemaMismatch`` otherwise); each footer is read once here."""
        for name, files in self.chosen().items():
            if files:
                check_schema(self.root, name, files)


def _dataset(root: Root, dataset: str, files: list[str]) -> pads.Dataset:
    """The files as a pyarrow dataset of the records-v1 schema (no file is opened)."""
    try:
        return pads.dataset(files, schema=SCHEMAS[dataset], filesystem=root.fs, format="parquet")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise SchemaMismatch(f"{dataset}: {exc}") from exc


def register(con: duckdb.DuckDBPyConnection, root: Root, dataset: str, files: list[str]) -> None:
    """Register ``raw_<dataset>`` over ``files`` (an empty relation of its schema when there are none).

    The files are not checked here: ``WindowFiles.check`` (or ``check_schema``) does that once per run.
    """
    schema = SCHEMAS[dataset]
    name = f"raw_{dataset}"
    if not files:
        con.register(name, schema.empty_table())
    elif root.is_local:
        relation = con.read_parquet(files, hive_partitioning=False, union_by_name=False)
        relation.select(*[duckdb.ColumnExpression(f.name) for f in schema]).create_view(name)
    else:
        con.register(name, _dataset(root, dataset, files))


def check_schema(root: Root, dataset: str, files: list[str]) -> None:
    """Every file of ``dataset`` holds the records-v1 columns with their types (``SchemaMismatch`` if not)."""
    arrow = _dataset(root, dataset, files)
    try:
        _check_schema(arrow, SCHEMAS[dataset], files[0])
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise SchemaMismatch(f"{dataset}: {exc}") from exc


def _check_schema(dataset: pads.Dataset, schema: pa.Schema, first_file: str) -> None:
    """Every file must hold the records-v1 columns with their types (extra columns are allowed)."""
    for fragment in dataset.get_fragments():
        physical = fragment.physical_schema
        for column in schema:
            index = physical.get_field_index(column.name)
            if index < 0 or not physical.field(index).type.equals(column.type):
                found = "missing" if index < 0 else str(physical.field(index).type)
                raise SchemaMismatch(
                    f"{fragment.path}: column {column.name} is {found}, "
                    f"records-v1 says {column.type} (first file {first_file})"
                )


def register_window(
    con: duckdb.DuckDBPyConnection,
    root: Root,
    read_start: dt.datetime,
    read_end: dt.datetime,
    as_of: dt.datetime,
) -> WindowFiles:
    """Register both raw relations for the window and return its files. ``NoInput`` if there are none."""
    last_day = (read_end - dt.timedelta(microseconds=1)).date()
    proposals, proposal_bytes = list_files(root, "proposals", read_start.date(), last_day)
    if not proposals:
        raise NoInput(f"no proposals under {root.uri} from {read_start.date()} to {last_day}")
    outcomes, _ = list_files(root, "outcomes", read_start.date(), max(as_of.date(), read_start.date()))
    files = WindowFiles(root, proposals, outcomes, proposal_bytes)
    files.check()
    files.register(con)
    return files
