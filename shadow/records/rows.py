# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Rows at the door and on the way out: validation, timestamps, partitions, Arrow tables.

Rows are plain dicts keyed by the records columns (``contracts.records``). At the door each value is checked
against its column's type (cheaply: the journal must never hold a row the Parquet writer would
reject), timestamps become integer microseconds (UTC), and the store fills ``record_version`` and
``writer_id``. On the way out a batch of rows becomes one Arrow table per Hive partition.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Final
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from contracts.records import DEFAULT_CANDIDATE, DROPS, OUTCOMES, PROPOSALS, RECORD_VERSION
from shadow.records.errors import InvalidRow

DATASETS: Final = {"proposals": PROPOSALS, "outcomes": OUTCOMES, "drops": DROPS}
TIME_COLUMN: Final = {"proposals": "received_at", "outcomes": "outcome_at", "drops": "minute"}
_UTC_US: Final = pa.timestamp("us", tz="UTC")
_REQUIRED: Final = {"proposals": ("decision_id", "decision_type", "received_at", "status"),
                    "outcomes": ("decision_id", "decision_type", "outcome", "outcome_at"),
                    "drops": ("decision_type", "candidate", "minute", "reason", "dropped")}


_Check = tuple[frozenset[type], frozenset[type] | None, int | None]
_NUMBER: Final = frozenset({float, int})


def _check_for(arrow_type: pa.DataType) -> _Check:
    """Exact Python types a column accepts, its list elements' types, and its integer bound.

    Exact types (``type(v) in allowed``) are several times faster than ``isinstance`` on the hot
    path and keep ``bool`` out of integer columns for free.
    """
    if pa.types.is_string(arrow_type):
        return frozenset({str}), None, None
    if pa.types.is_boolean(arrow_type):
        return frozenset({bool}), None, None
    if pa.types.is_integer(arrow_type):
        return frozenset({int}), None, 2 ** (arrow_type.bit_width - 1)
    if pa.types.is_floating(arrow_type):
        return _NUMBER, None, None
    if pa.types.is_timestamp(arrow_type):
        return frozenset({int, datetime}), None, None
    element = arrow_type.value_type
    return frozenset({list, tuple}), (frozenset({str}) if pa.types.is_string(element) else _NUMBER), None


_CHECKS: Final = {name: {f.name: _check_for(f.type) for f in schema} for name, schema in DATASETS.items()}
_SIMPLE: Final = {name: {key: types for key, (types, elements, bound) in checks.items()
                         if elements is None and bound is None} for name, checks in _CHECKS.items()}
"""Columns whose check is one exact-type test: done inline, the common case on the hot path."""


def _accepts(types: frozenset[type], value: object) -> bool:
    """Exact type first (fast); subclasses (a ``StrEnum``) too, but never a bool for a number."""
    if type(value) in types:
        return True
    return not isinstance(value, bool) and isinstance(value, tuple(types))


def _check(checks: dict[str, _Check], key: str, value: Any) -> None:
    check = checks.get(key)
    if check is None:
        raise InvalidRow(f"unknown column {key!r}", key)
    types, elements, bound = check
    if not _accepts(types, value):
        raise InvalidRow(f"{key} must be {' or '.join(sorted(t.__name__ for t in types))}", key)
    if bound is not None and not -bound <= value < bound:
        raise InvalidRow(f"{key} is out of range", key)
    if elements is not None:
        for item in value:
            if not _accepts(elements, item):
                raise InvalidRow(f"{key} must hold {' or '.join(sorted(t.__name__ for t in elements))}", key)


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
    checks, simple = _CHECKS[dataset], _SIMPLE[dataset]
    out: dict[str, Any] = {}
    for key, value in row.items():
        if value is None:
            continue
        types = simple.get(key)
        if types is None or type(value) not in types:
            _check(checks, key, value)
        out[key] = value
    for key in _REQUIRED[dataset]:
        if key not in out or out[key] == "":
            raise InvalidRow(f"{key} is required", key)
    column = TIME_COLUMN[dataset]
    out[column] = to_micros(out[column], column)
    out["record_version"] = RECORD_VERSION
    out["writer_id"] = writer_id
    return out


PendingKey = tuple[str, str, str]


def pending_key(row: dict[str, Any]) -> PendingKey:
    """What one proposals row completes: (decision type, decision id, candidate).

    A decision offered to several candidates is accepted, and owes a row, once per candidate. Marks
    and rows written before candidates existed have none: they are the default candidate's.
    """
    return row["decision_type"], row["decision_id"], row.get("candidate") or DEFAULT_CANDIDATE


def accepted_mark(decision_id: str, decision_type: str, received_at_us: int, option_ids: list[str],
                  candidate: str = DEFAULT_CANDIDATE) -> dict[str, Any]:
    """The journal's note of a decision accepted for one candidate: what a ``lost`` row would need."""
    mark = {"decision_id": decision_id, "decision_type": decision_type, "received_at": received_at_us,
            "option_ids": option_ids, "candidate": candidate}
    checks = _CHECKS["proposals"]
    for key, value in mark.items():
        _check(checks, key, value)
        if value == "":
            raise InvalidRow(f"{key} is required", key)
    mark["received_at"] = to_micros(received_at_us, "received_at")
    mark["option_ids"] = list(option_ids)
    return mark


def lost_row(accepted: dict[str, Any], reason: str, writer_id: str,
             config_sha256: str | None) -> dict[str, Any]:
    """The proposals row of an accepted decision whose proposal never arrived."""
    return {"record_version": RECORD_VERSION, "decision_id": accepted["decision_id"],
            "decision_type": accepted["decision_type"], "received_at": accepted["received_at"],
            "sampled": True, "status": "lost", "reason": reason, "option_ids": accepted["option_ids"],
            "candidate": accepted.get("candidate", DEFAULT_CANDIDATE),
            "writer_id": writer_id, "config_sha256": config_sha256}


def _read_schema(schema: pa.Schema) -> pa.Schema:
    """The schema JSON is parsed with: timestamps arrive as integer microseconds."""
    return pa.schema([pa.field(f.name, pa.int64()) if pa.types.is_timestamp(f.type) else f for f in schema])


def table_from_json(dataset: str, lines: bytes | pa.Buffer, longest: int) -> pa.Table:
    """The rows of journal payloads (JSON objects from ``normalize``, one a line) as one table, in order.

    ``longest`` is the longest line's length (a row must fit in one block of the reader). Arrow's C++
    JSON reader with the explicit schema is about three times cheaper than decoding each payload in
    Python and building columns from lists; it reads ``lines`` in place.
    """
    schema = DATASETS[dataset]
    options = pajson.ParseOptions(explicit_schema=_read_schema(schema), unexpected_field_behavior="error")
    block = max(1 << 20, 2 * longest)
    table = pajson.read_json(pa.BufferReader(lines), parse_options=options,
                             read_options=pajson.ReadOptions(use_threads=False, block_size=block))
    columns = [table.column(f.name).cast(f.type) for f in schema]
    return pa.Table.from_arrays(columns, schema=schema)


def partitioned(dataset: str, table: pa.Table) -> dict[str, pa.Table]:
    """The table split by partition folder (decision type, UTC date), rows in their order.

    Arrow's casts give each row's UTC date (``strftime`` on every row cost about 1 us a row, this a few
    nanoseconds). No Python value is converted to Arrow here (each partition's key is compared as the
    Arrow scalars of the table's own values): pyarrow imports pandas on the first such conversion,
    about 30 MB that the sidecar would then keep for good after its first roll-over
    (``docs/sidecar.md``, Memory bound).
    """
    types = table.column("decision_type")
    days = table.column(TIME_COLUMN[dataset]).cast(_UTC_US).cast(pa.date32()).cast(pa.string())
    out: dict[str, pa.Table] = {}
    for decision_type in pc.unique(types):
        of_type = pc.equal(types, decision_type)
        for day in pc.unique(days.filter(of_type)):
            folder = f"{dataset}/decision_type={quote(decision_type.as_py(), safe='')}/date={day.as_py()}"
            out[folder] = table.filter(pc.and_(of_type, pc.equal(days, day)))
    return out
