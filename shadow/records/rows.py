# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Rows at the door and on the way out: validation, timestamps, partitions, Arrow tables.

Rows are plain dicts keyed by the records-v1 columns (``schema.py``). At the door each value is checked
against its column's type (cheaply: the journal must never hold a row the Parquet writer would
reject), timestamps become integer microseconds (UTC), and the store fills ``record_version`` and
``writer_id``. On the way out a batch of rows becomes one Arrow table per Hive partition.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import quote

import pyarrow as pa

from shadow.records.errors import InvalidRow
from shadow.records.schema import OUTCOMES, PROPOSALS, RECORD_VERSION

DATASETS: Final = {"proposals": PROPOSALS, "outcomes": OUTCOMES}
TIME_COLUMN: Final = {"proposals": "received_at", "outcomes": "outcome_at"}
_REQUIRED: Final = {"proposals": ("decision_id", "decision_type", "received_at", "status"),
                    "outcomes": ("decision_id", "decision_type", "outcome", "outcome_at")}


_Check = tuple[tuple[type, ...], tuple[type, ...] | None, int | None]


def _check_for(arrow_type: pa.DataType) -> _Check:
    """Python types a column accepts, its list elements' types, and its integer bound."""
    if pa.types.is_string(arrow_type):
        return (str,), None, None
    if pa.types.is_boolean(arrow_type):
        return (bool,), None, None
    if pa.types.is_integer(arrow_type):
        return (int,), None, 2 ** (arrow_type.bit_width - 1)
    if pa.types.is_floating(arrow_type):
        return (float, int), None, None
    if pa.types.is_timestamp(arrow_type):
        return (int, datetime), None, None
    element = arrow_type.value_type
    return (list, tuple), ((str,) if pa.types.is_string(element) else (float, int)), None


_CHECKS: Final = {name: {f.name: _check_for(f.type) for f in schema} for name, schema in DATASETS.items()}


def _check(dataset: str, key: str, value: Any) -> None:
    check = _CHECKS[dataset].get(key)
    if check is None:
        raise InvalidRow(f"unknown column {key!r} for {dataset}", key)
    types, elements, bound = check
    matches = isinstance(value, types) and (bool in types or not isinstance(value, bool))
    if not matches:
        raise InvalidRow(f"{key} must be {types[0].__name__}", key)
    if bound is not None and not -bound <= value < bound:
        raise InvalidRow(f"{key} is out of range", key)
    if elements is not None and not all(
            isinstance(x, elements) and not isinstance(x, bool) for x in value):
        raise InvalidRow(f"{key} must hold {elements[0].__name__} values", key)


def to_micros(value: int | datetime, field: str) -> int:
    """A timestamp as integer microseconds since the epoch (an aware datetime, or already an int)."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise InvalidRow(f"{field} must be timezone-aware", field)
        delta = value - datetime(1970, 1, 1, tzinfo=UTC)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return value


def normalize(dataset: str, row: dict[str, Any], writer_id: str) -> dict[str, Any]:
    """A validated copy of ``row`` ready for the journal; raises ``InvalidRow`` naming the field."""
    out = {k: v for k, v in row.items() if v is not None}
    for key, value in out.items():
        _check(dataset, key, value)
    for key in _REQUIRED[dataset]:
        if key not in out or out[key] == "":
            raise InvalidRow(f"{key} is required", key)
    column = TIME_COLUMN[dataset]
    out[column] = to_micros(out[column], column)
    out["record_version"] = RECORD_VERSION
    out["writer_id"] = writer_id
    return out


def lost_row(accepted: dict[str, Any], reason: str, writer_id: str,
             config_sha256: str | None) -> dict[str, Any]:
    """The proposals row of an accepted decision whose proposal never arrived."""
    return {"record_version": RECORD_VERSION, "decision_id": accepted["decision_id"],
            "decision_type": accepted["decision_type"], "received_at": accepted["received_at"],
            "sampled": True, "status": "lost", "reason": reason, "option_ids": accepted["option_ids"],
            "writer_id": writer_id, "config_sha256": config_sha256}


def partition_dir(dataset: str, decision_type: str, micros: int) -> str:
    """``<dataset>/decision_type=<t>/date=<YYYY-MM-DD>`` (the type URI-escaped, as Hive readers expect)."""
    day = datetime.fromtimestamp(micros / 1_000_000, tz=UTC).date().isoformat()
    return f"{dataset}/decision_type={quote(decision_type, safe='')}/date={day}"


def partitioned(dataset: str, rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows grouped by their partition folder, in arrival order."""
    column = TIME_COLUMN[dataset]
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[partition_dir(dataset, row["decision_type"], row[column])].append(row)
    return dict(groups)


def to_table(dataset: str, rows: list[dict[str, Any]]) -> pa.Table:
    """One Arrow table with the dataset's exact schema (absent columns are null)."""
    schema = DATASETS[dataset]
    columns = [pa.array([row.get(f.name) for row in rows], type=f.type) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)
