"""The workbench's one boundary to the records: the sample file, the stored states, earlier audits.

Blind by construction: the proposals are read for ``decision_id``, ``decision_type`` and the stored
(already redacted) ``state`` only, and the outcomes for rows with ``source = 'audit'`` only. Production's
outcome, the proposals and their probabilities are never read, so no page can show them.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from audit.errors import SetupError
from contracts.audit_samples import FOLDER
from contracts.records import SOURCE_AUDIT
from pipelines.weeks import parse_week
from shadow.records.layout import filesystem, open_dataset

if TYPE_CHECKING:
    from shadow.records.settings import RecordSettings

PROPOSAL_COLUMNS = ("decision_type", "decision_id", "state")
"""The only proposals columns the workbench reads (never ``proposal``, ``probabilities``, ``logits``)."""


@dataclass(frozen=True)
class SampleRow:
    """One sampled decision, as an auditor may see it (no stratum, no inclusion probability)."""

    sample_id: str
    decision_type: str
    decision_id: str
    double_audit: bool

    @property
    def key(self) -> tuple[str, str, str]:
        """``(sample_id, decision_type, decision_id)``: what one answer answers."""
        return self.sample_id, self.decision_type, self.decision_id


@dataclass(frozen=True)
class Audit:
    """One audit outcome already in the records."""

    key: tuple[str, str, str]
    auditor: str
    answer: str
    at_us: int


def read_sample(settings: RecordSettings, week: str, decision_type: str | None) -> list[SampleRow]:
    """Every sampled decision of ``week`` (of ``decision_type`` only, if given), in the file's order."""
    fs, base = filesystem(settings)
    folder = f"{base}/{FOLDER}/week={week}"
    try:
        paths = sorted(i.path for i in fs.get_file_info(pafs.FileSelector(folder, recursive=True,
                                                                            allow_not_found=True))
                       if i.base_name.endswith(".parquet") and not i.base_name.startswith((".", "_")))
    except (OSError, pa.ArrowException) as exc:
        raise SetupError(f"cannot list {folder}: {exc}") from exc
    rows: list[SampleRow] = []
    for path in paths:
        try:
            table = pq.read_table(path, filesystem=fs,
                                  columns=["sample_id", "decision_id", "decision_type", "double_audit"])
        except (OSError, pa.ArrowException, KeyError) as exc:
            raise SetupError(f"{path}: not an audit sample file: {exc}") from exc
        rows.extend(SampleRow(str(item["sample_id"]), str(item["decision_type"]), str(item["decision_id"]),
                              bool(item["double_audit"]))
                    for item in table.to_pylist()
                    if decision_type is None or item["decision_type"] == decision_type)
    if not rows:
        kind = f" of type {decision_type!r}" if decision_type else ""
        raise SetupError(f"no audit sample{kind} for {week} under {folder} (run `semif-shadow audit sample`)")
    return rows


def _week_dates(week: str) -> tuple[dt.date, dt.date]:
    """The week's days, a day either side (a decision near midnight may sit in the next day's folder)."""
    monday = parse_week(week)
    return monday - dt.timedelta(days=1), monday + dt.timedelta(days=7)


def read_states(settings: RecordSettings, week: str,
                rows: list[SampleRow]) -> dict[tuple[str, str], str | None]:
    """The stored (redacted) state of each sampled decision: ``(type, id) -> state`` (None: not stored)."""
    first, last = _week_dates(week)
    ids = sorted({r.decision_id for r in rows})
    types = sorted({r.decision_type for r in rows})
    wanted = (pc.field("decision_type").isin(types) & pc.field("decision_id").isin(ids)
              & (pc.field("date") >= first) & (pc.field("date") <= last))
    table = open_dataset(settings, "proposals").to_table(columns=list(PROPOSAL_COLUMNS), filter=wanted)
    states: dict[tuple[str, str], str | None] = {}
    for item in table.to_pylist():
        key = (item["decision_type"], item["decision_id"])
        if states.get(key) is None:
            states[key] = item["state"]
    return states


def read_audits(settings: RecordSettings, sample_ids: set[str]) -> list[Audit]:
    """Every audit outcome of these samples already in the records, oldest first."""
    wanted = (pc.field("source") == SOURCE_AUDIT) & pc.field("audit_sample").isin(sorted(sample_ids))
    columns = ["audit_sample", "decision_type", "decision_id", "auditor", "outcome", "outcome_at"]
    table = open_dataset(settings, "outcomes").to_table(columns=columns, filter=wanted)
    audits = [Audit((item["audit_sample"], item["decision_type"], item["decision_id"]), item["auditor"] or "",
                    item["outcome"], int(item["outcome_at"].timestamp() * 1_000_000))
              for item in table.to_pylist()]
    return sorted(audits, key=lambda a: a.at_us)
