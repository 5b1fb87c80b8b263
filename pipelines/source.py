"""The raw relations.

Records files of the read window, registered in DuckDB as ``raw_proposals``, ``raw_outcomes`` and
``raw_drops`` (the sidecar's drop summaries: decisions counted instead of written, summed by the funnel).
Partitions are pruned by their ``date=`` folder before anything is opened. The files are kept by decision
type so that the one large join (``int_decisions``) can be built one type at a time.

Local roots are read by DuckDB's own Parquet reader; ``s3://`` roots through a pyarrow dataset that
DuckDB scans (DuckDB cannot download its httpfs extension here). Both use the records v1.2 schema from
``contracts.records`` and fail with ``SchemaMismatch`` on a file that does not follow it. Files written
before v1.1 or v1.2 lack the columns added since; they read as null (a window of only v1.2 files takes the
fast path).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from contracts.audit_samples import AUDIT_SAMPLES
from contracts.audit_samples import FOLDER as SAMPLE_FOLDER
from contracts.records import ADDED_AFTER_V1, DROPS, SCHEMAS
from pipelines.errors import BadArgument, NoInput, SchemaMismatch
from pipelines.sqlmodels import quote_ident
from pipelines.weeks import parse_week

if TYPE_CHECKING:
    from collections.abc import Collection

    import pyarrow.dataset as pads

    from pipelines.storage import Root

_SCHEMAS = {**SCHEMAS, "drops": DROPS, "audit_samples": AUDIT_SAMPLES}
"""The datasets read: the two row datasets, the drop summaries and the audit samples."""
_DUCKDB_TYPES = {
    pa.string(): "VARCHAR", pa.bool_(): "BOOLEAN", pa.int16(): "SMALLINT", pa.int32(): "INTEGER",
    pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.timestamp("us", tz="UTC"): "TIMESTAMP WITH TIME ZONE",
}
"""DuckDB types of the records' Arrow types (what a null of a column missing from the files is cast to)."""


def duckdb_type(arrow: pa.DataType) -> str:
    """The DuckDB type DuckDB's Parquet reader gives a records column of this Arrow type."""
    if pa.types.is_list(arrow):
        return f"{duckdb_type(arrow.value_type)}[]"
    try:
        return _DUCKDB_TYPES[arrow]
    except KeyError:
        raise TypeError(f"no DuckDB type for the Arrow type {arrow}") from None


def _children(root: Root, path: str, prefix: str) -> list[tuple[str, str]]:
    """``(value, path)`` of the ``prefix=value`` folders directly under ``path``."""
    infos = root.fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return sorted(
        (info.base_name.removeprefix(prefix), info.path)
        for info in infos
        if info.type == pafs.FileType.Directory and info.base_name.startswith(prefix)
    )


def list_files(
    root: Root, dataset: str, first: dt.date, last: dt.date, only: str | None = None
) -> tuple[dict[str, list[str]], dict[str, int]]:
    """Complete Parquet files of ``dataset`` in ``date=`` partitions ``first..last``, and bytes, by type.

    ``only``: list that decision type's folder alone (the others are not listed at all).
    """
    files: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    lo, hi = first.isoformat(), last.isoformat()
    types = (_children(root, root.join(dataset), "decision_type=") if only is None
             else [(only, root.join(dataset, f"decision_type={only}"))])
    for decision_type, type_dir in types:
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


def list_samples(root: Root, first: dt.date, last: dt.date) -> dict[str, list[str]]:
    """The audit sample files of the ISO weeks whose Monday is in ``first - 6 days .. last``, by type."""
    files: dict[str, list[str]] = {}
    for week, week_dir in _children(root, root.join(SAMPLE_FOLDER), "week="):
        try:
            monday = parse_week(week)
        except BadArgument:
            continue  # not a week folder
        if first - dt.timedelta(days=6) <= monday <= last:
            for decision_type, type_dir in _children(root, week_dir, "decision_type="):
                infos = root.fs.get_file_info(pafs.FileSelector(type_dir))
                found = sorted(i.path for i in infos if i.type == pafs.FileType.File
                               and i.base_name.endswith(".parquet")
                               and not i.base_name.startswith((".", "_")))
                files.setdefault(decision_type, []).extend(found)
    return files


@dataclass(frozen=True)
class WindowFiles:
    """The window's proposals and outcomes files, by decision type (the join key holds the type)."""

    root: Root
    proposals: dict[str, list[str]]
    outcomes: dict[str, list[str]]
    proposal_bytes: dict[str, int] = field(default_factory=dict)
    """Bytes of each type's proposals files: the size of its share of the join."""
    older: set[str] = field(default_factory=set)
    """Datasets with files written before v1.2 (found by `check`): read by name, missing columns null."""
    drops: dict[str, list[str]] = field(default_factory=dict)
    """The window's drop summary files, by decision type."""
    audit_samples: dict[str, list[str]] = field(default_factory=dict)
    """The audit sample files of the window's weeks, by decision type (``contracts/audit_samples.py``)."""

    def counts(self) -> dict[str, int]:
        """How many files each dataset has."""
        return {name: sum(map(len, files.values())) for name, files in self.datasets().items()}

    def datasets(self) -> dict[str, dict[str, list[str]]]:
        """``{"proposals": ..., "outcomes": ..., "drops": ..., "audit_samples": ...}``."""
        return {"proposals": self.proposals, "outcomes": self.outcomes, "drops": self.drops,
                "audit_samples": self.audit_samples}

    def types_largest_first(self) -> list[str]:
        """The decision types with proposals, most proposal bytes first (ties by name).

        Built in this order, the largest type's join runs while the decision table is still empty, which
        lowers the job's peak memory.
        """
        return sorted(self.proposals, key=lambda t: (-self.proposal_bytes.get(t, 0), t))

    def passes(self, budget: int) -> list[list[str]]:
        """The decision types grouped into the runner's passes, each with at most ``budget`` proposal bytes.

        First fit, largest type first (a type larger than the budget is a pass of its own); every pass holds
        whole types, as every model keys its rows by type. Types with files but no proposals (only drops, say)
        join the last pass.
        """
        groups: list[tuple[int, list[str]]] = []
        for decision_type in self.types_largest_first():
            size = self.proposal_bytes.get(decision_type, 0)
            index = next((i for i, (used, _) in enumerate(groups) if used + size <= budget), None)
            if index is None:
                groups.append((size, [decision_type]))
            else:
                used, types = groups[index]
                groups[index] = (used + size, [*types, decision_type])
        rest = {t for files in self.datasets().values() for t in files} - set(self.proposals)
        if groups:
            groups[-1] = (groups[-1][0], [*groups[-1][1], *rest])
        return [sorted(types) for _, types in groups]

    def subset(self, decision_types: Collection[str]) -> WindowFiles:
        """The same window with only ``decision_types``' files."""
        def only(files: dict[str, list[str]]) -> dict[str, list[str]]:
            return {t: f for t, f in files.items() if t in decision_types}

        return replace(self, proposals=only(self.proposals), outcomes=only(self.outcomes),
                       drops=only(self.drops), audit_samples=only(self.audit_samples),
                       proposal_bytes={t: n for t, n in self.proposal_bytes.items() if t in decision_types})

    def chosen(self, decision_type: str | None = None) -> dict[str, list[str]]:
        """Each dataset's files, of every type (in type order) or of one type."""
        return {
            name: [f for t in sorted(files) if decision_type in (None, t) for f in files[t]]
            for name, files in self.datasets().items()
        }

    def register(self, con: duckdb.DuckDBPyConnection, decision_type: str | None = None) -> None:
        """Register the raw relations over every type's files, or over one type's."""
        for name, files in self.chosen(decision_type).items():
            register(con, self.root, name, files, complete=name not in self.older)

    def check(self) -> None:
        """Every file must follow the records schema (``SchemaMismatch`` otherwise); footers are read once."""
        for name, files in self.chosen().items():
            if files and not check_schema(self.root, name, files):
                self.older.add(name)


def _dataset(root: Root, dataset: str, files: list[str]) -> pads.Dataset:
    """The files as a pyarrow dataset of the records schema (no file is opened; missing columns null).

    Only S3 roots need it, and ``pyarrow.dataset`` imports pandas (``arrow_buffers.py``): imported here.
    """
    import pyarrow.dataset as pads  # noqa: PLC0415  (see the docstring)

    try:
        return pads.dataset(files, schema=_SCHEMAS[dataset], filesystem=root.fs, format="parquet")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise SchemaMismatch(f"{dataset}: {exc}") from exc


def register(con: duckdb.DuckDBPyConnection, root: Root, dataset: str, files: list[str], *,
             complete: bool = True) -> None:
    """Register ``raw_<dataset>`` over ``files`` (an empty relation of its schema when there are none).

    ``complete``: every file has every column (as ``check_schema`` found); otherwise files are read by
    column name and a column that no file has is null. The files are not checked here:
    ``WindowFiles.check`` (or ``check_schema``) does that once per run.
    """
    schema = _SCHEMAS[dataset]
    name = f"raw_{dataset}"
    con.unregister(name)  # a registered (empty) relation would hide the view made below, and the reverse
    con.execute(f"drop view if exists {name}")
    if not files:  # no relation registered from Arrow: that would import pandas
        nulls = ", ".join(f"null::{duckdb_type(f.type)} as {quote_ident(f.name)}" for f in schema)
        con.execute(f"create view {name} as select {nulls} where false")
    elif not root.is_local:
        con.register(name, _dataset(root, dataset, files))
    elif complete:
        relation = con.read_parquet(files, hive_partitioning=False, union_by_name=False)
        relation.select(*[duckdb.ColumnExpression(f.name) for f in schema]).create_view(name)
    else:
        relation = con.read_parquet(files, hive_partitioning=False, union_by_name=True)
        present = set(relation.columns)
        columns = [
            duckdb.ColumnExpression(f.name) if f.name in present
            else duckdb.ConstantExpression(None).cast(duckdb_type(f.type)).alias(f.name)
            for f in schema
        ]
        relation.select(*columns).create_view(name)


def check_schema(root: Root, dataset: str, files: list[str]) -> bool:
    """Every file of ``dataset`` holds the records columns with their types (``SchemaMismatch`` if not).

    Returns whether every file has every column (False: some were written before v1.2). Reads each
    file's footer.
    """
    complete = True
    for path in files:
        try:
            physical = pq.read_schema(path, filesystem=root.fs)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
            raise SchemaMismatch(f"{dataset}: {path}: {exc}") from exc
        complete = _check_schema(physical, dataset, path, files[0]) and complete
    return complete


def _check_schema(physical: pa.Schema, name: str, path: str, first_file: str) -> bool:
    """The file must hold the v1 columns, and any later column it has, with their types (extras allowed)."""
    complete = True
    optional = ADDED_AFTER_V1.get(name, frozenset())
    for column in _SCHEMAS[name]:
        index = physical.get_field_index(column.name)
        if index < 0 and column.name in optional:
            complete = False
        elif index < 0 or not physical.field(index).type.equals(column.type):
            found = "missing" if index < 0 else str(physical.field(index).type)
            raise SchemaMismatch(
                f"{path}: column {column.name} is {found}, "
                f"the records schema says {column.type} (first file {first_file})"
            )
    return complete


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
    drops, _ = list_files(root, "drops", read_start.date(), last_day)
    samples = list_samples(root, read_start.date(), last_day)
    files = WindowFiles(root, proposals, outcomes, proposal_bytes, drops=drops, audit_samples=samples)
    files.check()
    files.register(con)
    return files
