"""An independent reference for the ``correctness`` mart: units from the raw files, the estimator in numpy.

Nothing here runs the pipelines' SQL: the records and the sample files are read with pyarrow, the latest
answers and production's outcome picked in Python, and the stratified ratio estimator (Cochran 1977, 6.11)
computed with numpy.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.parquet as pq

from contracts.records import SOURCE_AUDIT

if TYPE_CHECKING:
    from pathlib import Path


@dataclass(frozen=True)
class Estimate:
    """A ratio estimate, its linearization standard error, and the interval's (pseudo-decisions added)."""

    value: float
    se: float
    se_adjusted: float


def stratified_ratio(y: np.ndarray, x: np.ndarray, strata: np.ndarray, sizes: dict[str, int]) -> Estimate:
    """R = sum_h N_h/m_h sum y / sum_h N_h/m_h sum x, V = 1/X^2 sum_h N_h^2 (1 - m_h/N_h) s2_e,h / m_h.

    ``se_adjusted`` computes each stratum's s2 with one unit (x=1, y=1) and one (x=1, y=0) added.
    """
    weights = np.array([sizes[s] for s in strata], dtype=float)
    m = {s: int((strata == s).sum()) for s in sizes}
    weights = weights / np.array([m[s] for s in strata], dtype=float)
    x_hat = float((weights * x).sum())
    r = float((weights * y).sum()) / x_hat
    v = v_adj = 0.0
    for s, big_n in sizes.items():
        e = y[strata == s] - r * x[strata == s]
        scale = big_n * big_n * (1 - m[s] / big_n) / m[s]
        v += scale * (e.var(ddof=1) if m[s] > 1 else 0.0)
        v_adj += scale * np.append(e, [1 - r, -r]).var(ddof=1)
    return Estimate(r, float(np.sqrt(v)) / x_hat, float(np.sqrt(v_adj)) / x_hat)


def _rows(root: Path, dataset: str, columns: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for path in sorted((root / dataset).rglob("*.parquet")):
        rows.extend(pq.read_table(path, columns=columns).to_pylist())
    return rows


@dataclass(frozen=True)
class Units:
    """One week's audited units of one type: strata, sizes, production's y, and each model's (x, y)."""

    strata: np.ndarray
    sizes: dict[str, int]
    production: np.ndarray
    models: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]
    """``(candidate, model_identity_sha256)`` -> (x, y) over the same units."""
    paired: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]
    """The same keys -> (right where production was wrong, wrong where production was right)."""
    population: dict[str, int]
    """Labelled decisions per stratum, recounted from the records."""


def _outcomes(root: Path, decision_type: str) -> tuple[dict[str, Any], dict[tuple[Any, ...], Any]]:
    """Production's latest outcome by decision; the latest answer by (sample, decision, auditor)."""
    production: dict[str, Any] = {}
    answers: dict[tuple[Any, ...], Any] = {}
    columns = ["decision_id", "decision_type", "outcome", "outcome_at", "source", "auditor", "audit_sample"]
    for o in _rows(root, "outcomes", columns):
        if o["decision_type"] != decision_type:
            continue
        key = (o["outcome_at"], o["outcome"])
        if o["source"] == SOURCE_AUDIT:
            slot = (o["audit_sample"], o["decision_id"], o["auditor"])
            answers[slot] = max(answers.get(slot, key), key)
        else:
            production[o["decision_id"]] = max(production.get(o["decision_id"], key), key)
    return {k: v[1] for k, v in production.items()}, {k: v[1] for k, v in answers.items()}


def _scored(root: Path, week: str, decision_type: str) -> dict[str, dict[tuple[str, str], Any]]:
    """Each decision of the week's scored proposals: (candidate, identity sha256) -> proposal."""
    start = dt.datetime.combine(dt.date.fromisocalendar(int(week[:4]), int(week[6:]), 1), dt.time(), dt.UTC)
    end = start + dt.timedelta(days=7)
    scored: dict[str, dict[tuple[str, str], Any]] = defaultdict(dict)
    columns = ["decision_id", "decision_type", "received_at", "status", "proposal", "candidate",
               "model_identity_sha256"]
    for p in _rows(root, "proposals", columns):
        in_week = start <= p["received_at"] < end
        if p["decision_type"] == decision_type and p["status"] == "scored" and in_week:
            scored[p["decision_id"]][p["candidate"], p["model_identity_sha256"]] = p["proposal"]
    return scored


def _mean(flags: list[bool]) -> float:
    return float(np.mean(flags))


def units(root: Path, week: str, decision_type: str) -> Units:
    """The audited units of ``week``'s sample of ``decision_type``, from the raw files alone."""
    production, answers = _outcomes(root, decision_type)
    scored = _scored(root, week, decision_type)
    sample = pq.read_table(root / "audit_samples" / f"week={week}" / f"decision_type={decision_type}"
                           / "part-0.parquet").to_pylist()
    said: dict[str, list[Any]] = defaultdict(list)
    for (sample_id, decision_id, _), answer in sorted(answers.items(), key=str):
        if sample_id == sample[0]["sample_id"]:
            said[decision_id].append(answer)
    population: dict[str, int] = defaultdict(int)
    for decision_id, proposals in scored.items():
        if decision_id in production:
            agree = all(v == production[decision_id] for v in proposals.values())
            population["agree" if agree else "disagree"] += 1
    kept = [r["decision_id"] for r in sample
            if said.get(r["decision_id"]) and r["decision_id"] in production and r["decision_id"] in scored]
    models, paired = {}, {}
    for key in sorted({k for d in kept for k in scored[d]}):
        x = np.array([key in scored[d] for d in kept], dtype=float)
        mine = {d: scored[d].get(key) for d in kept}
        models[key] = (x, x * [_mean([mine[d] == a for a in said[d]]) for d in kept])
        paired[key] = (x * [_mean([mine[d] == a != production[d] for a in said[d]]) for d in kept],
                       x * [_mean([production[d] == a != mine[d] for a in said[d]]) for d in kept])
    strata = {r["decision_id"]: r["stratum"] for r in sample}
    return Units(
        strata=np.array([strata[d] for d in kept]),
        sizes={r["stratum"]: r["stratum_decisions"] for r in sample},
        production=np.array([_mean([production[d] == a for a in said[d]]) for d in kept]),
        models=models,
        paired=paired,
        population=dict(population),
    )
