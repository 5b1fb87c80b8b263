"""An independent reference for the ``correctness`` mart: units from the raw files, the estimator in numpy.

Nothing here runs the pipelines' SQL: the records and the sample files are read with pyarrow, the latest
answers and production's outcome picked in Python, and the estimates (a stratified mean over the decisions
a model scored, Cochran 1977, 5A.14; MOVER over per-stratum intervals, Zou & Donner 2008) computed with
numpy, each stratum's corrected Wilson interval written from Newcombe (1998).
"""

from __future__ import annotations

import datetime as dt
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow.parquet as pq
from scipy.stats import norm

from contracts.records import SOURCE_AUDIT

Z95 = float(norm.isf(0.025))

if TYPE_CHECKING:
    from pathlib import Path


@dataclass(frozen=True)
class Estimate:
    """A stratified mean over a model's scored decisions, its interval and its linearized standard error."""

    value: float
    low: float
    high: float
    se: float


def _wilson(successes: float, n: float, z: float) -> tuple[float, float]:
    """The Wilson score interval with continuity correction (Newcombe 1998, method 4), written from the paper.

    ``test_the_corrected_wilson_interval_matches_newcombes_worked_examples`` checks it on the paper's
    examples.
    """
    p, zz = successes / n, z * z
    root_low = math.sqrt(max(zz - 2 - 1 / n + 4 * p * (n * (1 - p) + 1), 0.0))
    root_high = math.sqrt(max(zz + 2 - 1 / n + 4 * p * (n * (1 - p) - 1), 0.0))
    low = 0.0 if p <= 0 else (2 * n * p + zz - 1 - z * root_low) / (2 * (n + zz))
    high = 1.0 if p >= 1 else (2 * n * p + zz + 1 + z * root_high) / (2 * (n + zz))
    return max(low, 0.0), min(high, 1.0)


def _strata(x: np.ndarray, strata: np.ndarray, sizes: dict[str, int]) -> dict[str, tuple[float, float]]:
    """Per stratum the model's audited decisions n_h and its scored decisions N^_h = N_h n_h / m_h."""
    out = {}
    for s, big_n in sizes.items():
        members = strata == s
        n = float(x[members].sum())
        if n > 0:
            out[s] = (n, big_n * n / float(members.sum()))
    return out


def stratified_mean(y: np.ndarray, x: np.ndarray, strata: np.ndarray, sizes: dict[str, int],
                    z: float = Z95, *, sizes_vary: bool = True) -> Estimate:
    """Theta = sum_h W_h p_h over the scored decisions; MOVER over Wilson per stratum; no fpc.

    low = theta - sqrt(sum W_h^2 (p_h - l_h)^2 + z^2 B), B = sum W_h (p_h - theta)^2 / N^ (the strata's
    random sizes; left out with ``sizes_vary=False``); se = sqrt(sum W_h^2 p_h (1 - p_h) / n_h + B).
    """
    found = _strata(x, strata, sizes)
    total = sum(big for _, big in found.values())
    parts = []
    for s, (n, big) in found.items():
        share = float(y[(strata == s) & (x > 0)].sum()) / n
        parts.append((big / total, share, n, *_wilson(share * n, n, z)))
    theta = sum(w * p for w, p, *_ in parts)
    between = sum(w * (p - theta) ** 2 for w, p, *_ in parts) / total if sizes_vary else 0.0
    below = sum((w * (p - lo)) ** 2 for w, p, _, lo, _ in parts)
    above = sum((w * (hi - p)) ** 2 for w, p, _, _, hi in parts)
    se = np.sqrt(sum(w * w * p * (1 - p) / n for w, p, n, *_ in parts) + between)
    return Estimate(theta, max(theta - np.sqrt(below + z * z * between), 0.0),
                    min(theta + np.sqrt(above + z * z * between), 1.0), float(se))


def paired_difference(right_vs_wrong: np.ndarray, wrong_vs_right: np.ndarray, differs: np.ndarray,
                      x: np.ndarray, strata: np.ndarray, sizes: dict[str, int], z: float = Z95) -> Estimate:
    """Diff = A - B over the discordant decisions, MOVER for correlated estimates (Zou & Donner 2008).

    Per stratum the shares r_h, w_h are over its k_h discordant decisions (``differs``), weighted W_h q_h;
    rho from the multinomial covariance; the normal term: the strata's random sizes and each stratum's
    sampled discordant share.
    """
    found = _strata(x, strata, sizes)
    total = sum(big for _, big in found.values())
    parts = []
    for s, (n, big) in found.items():
        kept = (strata == s) & (x > 0)
        k = float(differs[kept].sum())
        rr, ww = float(right_vs_wrong[kept].sum()), float(wrong_vs_right[kept].sum())
        parts.append((big / total, n, k, rr, ww))
    diff = sum(w * (rr - ww) / n for w, n, _, rr, ww in parts)
    extra = sum(w * ((rr - ww) / n - diff) ** 2 for w, n, _, rr, ww in parts) / total
    a_lo = a_hi = b_lo = b_hi = v_a = v_b = cov = 0.0
    for w, n, k, rr, ww in parts:
        if k == 0:
            continue
        r, v, q = rr / k, ww / k, k / n
        (r_l, r_h), (v_l, v_h) = _wilson(rr, k, z), _wilson(ww, k, z)
        u = w * q
        a_lo, a_hi = a_lo + (u * (r - r_l)) ** 2, a_hi + (u * (r_h - r)) ** 2
        b_lo, b_hi = b_lo + (u * (v - v_l)) ** 2, b_hi + (u * (v_h - v)) ** 2
        v_a, v_b, cov = v_a + u * u * r * (1 - r) / k, v_b + u * u * v * (1 - v) / k, cov - u * u * r * v / k
        extra += w * w * (r - v) ** 2 * q * (1 - q) / n
    rho = cov / np.sqrt(v_a * v_b) if v_a > 0 and v_b > 0 else 0.0
    low = diff - np.sqrt(a_lo + b_hi - 2 * rho * np.sqrt(a_lo * b_hi) + z * z * extra)
    high = diff + np.sqrt(a_hi + b_lo - 2 * rho * np.sqrt(a_hi * b_lo) + z * z * extra)
    return Estimate(diff, float(low), float(high), float(np.sqrt(v_a + v_b - 2 * cov + extra)))


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
    paired: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, np.ndarray]]
    """The same keys -> (right where production was wrong, wrong where production was right, proposal is not
    production's outcome)."""
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
                       x * [_mean([production[d] == a != mine[d] for a in said[d]]) for d in kept],
                       x * [float(mine[d] is not None and mine[d] != production[d]) for d in kept])
    strata = {r["decision_id"]: r["stratum"] for r in sample}
    return Units(
        strata=np.array([strata[d] for d in kept]),
        sizes={r["stratum"]: r["stratum_decisions"] for r in sample},
        production=np.array([_mean([production[d] == a for a in said[d]]) for d in kept]),
        models=models,
        paired=paired,
        population=dict(population),
    )
