"""Chat-backend rows without log-probabilities added beside generated records (``add_one_hot_rows``).

Each added row copies a scored, generated row under a new decision id (``oh-<id>``), with the chat
backend's one-hot marker in ``prompt_builder`` and probability 1 on its proposal; its outcome, if the
original has one, is copied under the new id. The identity columns are kept: every other copy keeps
its candidate too, so it shares the original's ``model_key`` and only the row's own marker tells it
apart; the rest become candidate ``chat`` (``CHAT``), model keys whose rows are all one-hot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from contracts.records import OUTCOMES, PROPOSALS

if TYPE_CHECKING:
    from pathlib import Path

ONE_HOT_BUILDER = "chat/2;json_object;one_hot"
PREFIX = "oh-"
WRITER = "gen-0003"
CHAT = "chat"


def one_hot_copy(table: pa.Table, every: int) -> pa.Table:
    """Every ``every``-th scored row of ``table``, made a one-hot chat row under a new id."""
    scored = table.filter(pc.equal(table["status"], "scored"))
    rows = scored.take(pa.array(range(0, scored.num_rows, every), pa.int64()))
    options, proposals = rows["option_ids"].to_pylist(), rows["proposal"].to_pylist()
    probabilities = [[float(o == p) for o in opts] for opts, p in zip(options, proposals, strict=True)]
    columns = {
        "decision_id": pc.binary_join_element_wise(PREFIX, rows["decision_id"], ""),
        "probabilities": pa.array(probabilities, pa.list_(pa.float64())),
        "logits": pa.nulls(rows.num_rows, pa.list_(pa.float64())),
        "proposal_probability": pa.array([1.0] * rows.num_rows, pa.float64()),
        "prompt_builder": pa.array([ONE_HOT_BUILDER] * rows.num_rows, pa.string()),
        "writer_id": pa.array([WRITER] * rows.num_rows, pa.string()),
        "candidate": pc.if_else(pa.array([i % 2 == 1 for i in range(rows.num_rows)], pa.bool_()),
                                pa.scalar(CHAT), rows["candidate"]),
    }
    for name, column in columns.items():
        rows = rows.set_column(rows.schema.get_field_index(name), name, column)
    return rows


def add_one_hot_rows(root: Path, every: int = 3) -> int:
    """Add one-hot copies of every ``every``-th scored proposal under ``root``, and of their outcomes.

    Returns how many of the copies are labelled (their original has an outcome).
    """
    added: list[str] = []
    for path in sorted(root.glob("proposals/*/*/*.parquet")):
        copy = one_hot_copy(pq.read_table(path, schema=PROPOSALS), every)
        if copy.num_rows:
            pq.write_table(copy, path.with_name(f"{WRITER}-{path.name}"))
            added += copy["decision_id"].to_pylist()
    labelled: set[str] = set()
    for path in sorted(root.glob("outcomes/*/*/*.parquet")):
        outcomes = pq.read_table(path, schema=OUTCOMES)
        renamed = pc.binary_join_element_wise(PREFIX, outcomes["decision_id"], "")
        copy = outcomes.set_column(outcomes.schema.get_field_index("decision_id"), "decision_id", renamed)
        copy = copy.filter(pc.is_in(copy["decision_id"], pa.array(added, pa.string())))
        if copy.num_rows:
            pq.write_table(copy, path.with_name(f"{WRITER}-{path.name}"))
            labelled.update(copy["decision_id"].to_pylist())
    return len(labelled)
