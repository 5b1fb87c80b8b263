"""The `gallery` mart against pandas: each kind's 25 most confident disagreements, ties and all."""

from __future__ import annotations

import datetime as dt

import duckdb
import numpy as np
import pandas as pd

from pipelines.sqlmodels import load_model

WEEK = dt.date(2026, 11, 23)


def flagged_rows() -> pd.DataFrame:
    """`int_flagged` rows: crowded kinds whose 25th row sits in a bucket of ties, small kinds, a null key.

    Confidences are drawn from a few values 1e-6 apart (many exact ties, and many rows in the 1/10,000
    bucket of the 25th), plus bucket edges (0.9, 0.9001) and a kind with fewer than 25 rows.
    """
    rng = np.random.default_rng(11)
    parts = []
    kinds = [
        ("ticket_routing", "m-a", True, 300),
        ("ticket_routing", "m-a", False, 120),
        ("ticket_routing", None, False, 60),
        ("priority", "m-b", True, 12),
        ("priority", "m-b", False, 26),
    ]
    for kind, (decision_type, model_key, severe, n) in enumerate(kinds):
        crowded = 0.95 + rng.integers(0, 8, n) * 1e-6
        spread = rng.choice([0.9, 0.9001, 0.97, 0.99999], n)
        confidence = np.where(rng.random(n) < 0.7, crowded, spread)
        parts.append(pd.DataFrame({
            "decision_id": [f"d{kind}-{i:04d}" for i in rng.permutation(n)],
            "decision_type": decision_type, "week_start": WEEK, "model_key": model_key,
            "proposal": "refund", "outcome": "sales", "confidence": confidence, "severe": severe,
            "received_at": pd.Timestamp("2026-11-24T10:00:00"), "state": None,
        }))
    return pd.concat(parts, ignore_index=True)


def reference(rows: pd.DataFrame) -> pd.DataFrame:
    """Sort each kind by confidence (descending) then id, keep 25, rank severe first within the model key."""
    keys = ["decision_type", "week_start", "model_key", "severe"]
    ordered = rows.sort_values(["confidence", "decision_id"], ascending=[False, True])
    kept = ordered.groupby(keys, dropna=False, sort=False).head(25)
    placed = kept.sort_values(["severe", "confidence", "decision_id"], ascending=[False, False, True])
    placed = placed.assign(rank=placed.groupby(keys[:3], dropna=False, sort=False).cumcount() + 1)
    return placed[["decision_id", "rank"]].sort_values("decision_id").reset_index(drop=True)


def test_the_gallery_keeps_each_kinds_25_most_confident_as_pandas_does() -> None:
    """Every kept id and its rank equal pandas' sort-and-head, with hundreds of ties around the 25th row."""
    rows = flagged_rows()
    con = duckdb.connect()
    con.register("flagged_frame", rows)
    con.execute("create table int_flagged as select * from flagged_frame")
    con.execute(load_model("gallery").create_statement())
    got = con.sql("select decision_id, rank from gallery order by decision_id").df()
    want = reference(rows)
    assert len(want) == 25 + 25 + 25 + 12 + 25
    pd.testing.assert_frame_equal(got.astype({"rank": "int64"}), want.astype({"rank": "int64"}))
    cutoff_bucket = rows[rows.decision_type == "ticket_routing"].confidence.nlargest(25).min()
    assert (rows.confidence.between(cutoff_bucket - 1e-5, cutoff_bucket + 1e-5)).sum() > 25  # ties crowd it
