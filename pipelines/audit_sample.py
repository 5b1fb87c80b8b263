"""Draw a week's audit sample: a stratified random sample of its labelled decisions.

``semif-shadow audit sample`` (``audit/cli.py``) and the records generator's simulated auditor
(``pipelines/generate_audits.py``) both draw through here; it reads records only, so it sits with the
pipelines, below ``audit/`` (the workbench that collects the answers).

Phases: ``population`` (the week's labelled decisions of one type, read from the records with DuckDB:
scored by at least one candidate and production's outcome known, each put in the ``disagree`` stratum when
some candidate's proposal differs from production's outcome, else ``agree``; production's outcome is the
pipelines' own, the staging model ``stg_outcomes`` run over the week's records) -> ``draw`` (within each
stratum a simple random sample without replacement: every disagreement up to a cap, a share of the
agreements; a seeded share of the sampled rows marked for two auditors) -> ``write`` (one Parquet file,
``contracts.audit_samples``; an existing sample is never replaced).

The draw depends only on the population (sorted by decision id), the seed, the week and the type: the same
records and seed give the same sample.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from contracts.audit_samples import AUDIT_SAMPLES, STRATUM_AGREE, STRATUM_DISAGREE, sample_path
from contracts.records import COMPRESSION
from pipelines.errors import NoInput
from pipelines.source import WindowFiles, list_files
from pipelines.sqlmodels import WINDOW_VARIABLES, load_model, quote_ident
from pipelines.weeks import as_utc, parse_week

if TYPE_CHECKING:
    from pipelines.storage import Root

DEFAULT_DISAGREEMENTS: Final = 200
"""Disagreements audited at most per week and type (all of them in a typical week)."""
DEFAULT_AGREEMENT_RATE: Final = 0.02
"""The share of agreements audited: what keeps production's own error rate estimable where all agree."""
DEFAULT_OVERLAP: Final = 0.1
"""The share of sampled decisions meant for two auditors (their agreement: Cohen's kappa)."""

POPULATION_SQL: Final = """
with scored as (
    select decision_id, proposal
    from raw_proposals
    where status = 'scored' and decision_type = $type
      and received_at >= getvariable('read_start') and received_at < getvariable('read_end')
),

final as (
    select scored.decision_id, bool_or(scored.proposal is distinct from production.outcome) as disagree
    from scored
    join stg_outcomes as production using (decision_id)
    group by scored.decision_id
)

select * from final order by decision_id
"""
"""The population over the registered records and the ``stg_outcomes`` view (production's outcome: the
newest report, audits left out), with the window variables set to the week."""


@dataclass(frozen=True)
class Design:
    """How the sample is drawn: the cap on disagreements, the share of agreements, the seed, the overlap."""

    disagreements: int = DEFAULT_DISAGREEMENTS
    agreement_rate: float = DEFAULT_AGREEMENT_RATE
    seed: int = 0
    overlap: float = DEFAULT_OVERLAP


def week_bounds(week: str) -> tuple[dt.datetime, dt.datetime]:
    """The ISO week ``YYYY-Www`` as [Monday 00:00, next Monday 00:00) UTC; ``BadArgument`` if malformed."""
    start = as_utc(parse_week(week, "--week"))
    return start, start + dt.timedelta(days=7)


def population(root: Root, week: str, decision_type: str, as_of: dt.datetime | None = None) -> pa.Table:
    """The week's labelled decisions of ``decision_type``: ``decision_id`` and ``disagree``, by id.

    Production's outcome as known at ``as_of`` (default now), read from the week's start on.
    """
    start, end = week_bounds(week)
    as_of = as_of or dt.datetime.now(dt.UTC)
    last = (end - dt.timedelta(days=1)).date()
    proposals, _ = list_files(root, "proposals", start.date(), last, decision_type)
    outcomes, _ = list_files(root, "outcomes", start.date(), max(as_of.date(), start.date()), decision_type)
    files = WindowFiles(root, {decision_type: proposals.get(decision_type, [])},
                        {decision_type: outcomes.get(decision_type, [])})
    files.check()
    con = duckdb.connect()
    try:
        con.execute("set TimeZone = 'UTC'")
        files.register(con)
        for name, value in zip(WINDOW_VARIABLES, (start, end, as_of), strict=True):
            con.execute(f"set variable {quote_ident(name)} = $value::timestamptz", {"value": value})
        con.execute(load_model("stg_outcomes").create_statement())
        return con.sql(POPULATION_SQL, params={"type": decision_type}).to_arrow_table()
    finally:
        con.close()


def decision_types(root: Root, week: str, only: str | None = None) -> list[str]:
    """The decision types with proposals in the week (or ``only``); ``NoInput`` if there are none."""
    start, end = week_bounds(week)
    proposals, _ = list_files(root, "proposals", start.date(), (end - dt.timedelta(days=1)).date())
    found = [t for t in sorted(proposals) if only in (None, t)]
    if not found:
        raise NoInput(f"no proposals{f' of {only}' if only else ''} under {root.uri} in {week}")
    return found


def _rng(design: Design, week: str, decision_type: str) -> np.random.Generator:
    """A generator seeded by the seed, the week and the type (another type's draw is independent)."""
    digest = hashlib.sha256(f"{design.seed}\x00{week}\x00{decision_type}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:16], "big"))


def draw(decisions: pa.Table, week: str, decision_type: str, design: Design) -> pa.Table:
    """The sample (``contracts.audit_samples.AUDIT_SAMPLES``) drawn from the week's labelled ``decisions``."""
    rng = _rng(design, week, decision_type)
    ids = np.asarray(decisions.column("decision_id").to_pylist(), dtype=object)
    disagree = np.asarray(decisions.column("disagree").to_pylist(), dtype=bool)
    sample_id = f"{week}-{decision_type}-seed{design.seed}"
    parts = []
    for stratum, members in ((STRATUM_DISAGREE, disagree), (STRATUM_AGREE, ~disagree)):
        pool = ids[members]
        size = pool.size
        wanted = (min(design.disagreements, size) if stratum == STRATUM_DISAGREE
                  else min(size, math.ceil(design.agreement_rate * size)))
        chosen = np.sort(rng.choice(pool, size=wanted, replace=False)) if wanted else pool[:0]
        parts.append((stratum, chosen, size))
    n = sum(len(chosen) for _, chosen, _ in parts)
    double = np.zeros(n, dtype=bool)
    double[rng.choice(n, size=round(design.overlap * n), replace=False)] = True
    return pa.table({
        "sample_id": [sample_id] * n,
        "decision_id": [str(i) for _, chosen, _ in parts for i in chosen],
        "decision_type": [decision_type] * n,
        "week": [week] * n,
        "stratum": [stratum for stratum, chosen, _ in parts for _ in chosen],
        "inclusion_probability": [len(chosen) / size for _, chosen, size in parts for _ in chosen],
        "double_audit": double.tolist(),
        "stratum_decisions": [size for _, chosen, size in parts for _ in chosen],
    }, schema=AUDIT_SAMPLES)


def write(root: Root, table: pa.Table, week: str, decision_type: str) -> str | None:
    """Write the sample; ``None`` (nothing written) if this week and type already have one."""
    target = root.join(*sample_path(week, decision_type).split("/"))
    if root.fs.get_file_info(target).type != pafs.FileType.NotFound:
        return None
    folder = target.rsplit("/", 1)[0]
    root.fs.create_dir(folder, recursive=True)
    hidden = f"{folder}/.part-0.parquet.tmp"
    with root.fs.open_output_stream(hidden) as out:
        pq.write_table(table, out, compression=COMPRESSION)
    root.fs.move(hidden, target)  # appears whole
    return target
