"""The read-and-join floor of the pipelines job: what any run must do before it models anything.

`bench/pipelines.py --only duckdb floor` runs this beside the job, in a fresh process of its own, on the same
records, window, memory limit and threads. It connects as the job does, registers the same window and builds
the job's own staging views (`stg_proposals`, and `stg_outcomes` with each decision's latest production
outcome), then, one decision type at a time, largest first as `int_decisions` is built, joins the two and
counts every column the join returns, so that each column is read, decoded and carried through the join.
Nothing is modelled, stored or written: the job's time over this one's is what the models, the decisions'
table and the marts' output cost on top of reading the records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipelines.runner import Job

FLOOR_MODELS = ("stg_proposals", "stg_outcomes")
"""The staging views the floor reads: the job's own SQL, not a copy."""

FLOOR_QUERY = """
select count(*) as decisions, count(columns(*))
from stg_proposals
left join (
    select decision_id, outcome, first_at, first_source from stg_outcomes
) as outcomes using (decision_id)
"""
"""Every proposal column the job reads with its outcome, each counted (a count cannot skip the column)."""


def read_and_join(job: Job) -> int:
    """Read and join the job's window of proposals and outcomes as the job does; the number of rows joined."""
    from pipelines import runner  # noqa: PLC0415  (the worker imports only its own side)
    from pipelines.bind import bind_config  # noqa: PLC0415
    from pipelines.source import register_window  # noqa: PLC0415
    from pipelines.sqlmodels import load_model  # noqa: PLC0415

    span = job.window
    con = runner.connect(job.settings)
    try:
        bind_config(con, job.settings, span, job.prices)
        files = register_window(con, job.root, span.read_start, span.read_end, span.as_of)
        for name in FLOOR_MODELS:
            con.execute(load_model(name).create_statement())
        rows = 0
        with runner.optimizers_off(con, runner.BUILT_BY_TYPE):  # the job's plan: outcomes on the build side
            for decision_type in files.types_largest_first():
                files.register(con, decision_type)
                counted = con.execute(FLOOR_QUERY).fetchone()
                rows += int(counted[0]) if counted else 0
        return rows
    finally:
        con.close()
