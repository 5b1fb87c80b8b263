"""The weekly metrics again, in pandas + numpy + scikit-learn (scipy for the bounds): the bench's reference.

Same inputs (every proposals and outcomes file of the window), same metrics and conventions as the DuckDB
models: funnel and reasons, confusion, per-option precision/recall, agreement, kappa and baselines, severe
errors, top-label ECE (15 equal-mass bins), the debiased ECE with its block-bootstrap interval, MCE,
classwise ECE, Brier, log-loss, reliability rows, confidence and mix PSI with the ECE alert, per-option
Clopper-Pearson thresholds, the risk-coverage curve, selective coverage, latency percentiles and cost.
Vectorized: loops run over groups (decision type x week x model, about 30) and options, never over rows.
Results are written as Parquet.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
from scipy.special import betaincinv, erf
from scipy.stats import binom
from sklearn.metrics import cohen_kappa_score, confusion_matrix

from contracts.records import OUTCOMES, PROPOSALS, SOURCE_AUDIT

if TYPE_CHECKING:
    from pathlib import Path

COLUMNS = [
    "decision_id",
    "decision_type",
    "received_at",
    "sampled",
    "status",
    "reason",
    "option_ids",
    "probabilities",
    "proposal",
    "proposal_probability",
    "backend",
    "device",
    "instance_type",
    "model_name",
    "model_sha256",
    "quantization",
    "scorer_ms",
    "total_ms",
    "candidate",
    "normalization",
    "model_identity_sha256",
]
HIGH = {"ticket_routing": ["refund"], "priority": ["urgent"]}
PRICES = {"ml.c6i.8xlarge": 1.632, "ml.g6e.xlarge": 2.264}
GRID, BINS, BLOCKS, REPS, ALPHA, TARGET = 100, 15, 100, 200, 0.05, 0.95


def load(root: Path, as_of: pd.Timestamp) -> tuple[pd.DataFrame, dict[str, tuple[list[str], np.ndarray]]]:
    """Proposals joined with the latest outcome known at ``as_of``, with week and model key.

    Per decision type, its options and an (n_scored, k) probability matrix that ``prob_row`` indexes: the
    vectors never become Python objects.
    """
    files = {n: sorted(str(p) for p in (root / n).rglob("*.parquet")) for n in ("proposals", "outcomes")}
    table = pads.dataset(files["proposals"], schema=PROPOSALS).to_table(columns=COLUMNS)
    matrices = {}
    prob_row = np.full(table.num_rows, -1, dtype=np.int64)
    types = table["decision_type"].to_numpy(zero_copy_only=False)
    valid = table["probabilities"].is_valid().to_numpy(zero_copy_only=False)
    for t in np.unique(types):
        rows = np.flatnonzero((types == t) & valid)
        sub = table.take(pa.array(rows))
        options = sub["option_ids"][0].as_py()
        matrices[str(t)] = (
            options,
            pc.list_flatten(sub["probabilities"]).to_numpy().reshape(-1, len(options)),
        )
        prob_row[rows] = np.arange(rows.size)
    props = table.drop_columns(["option_ids", "probabilities"]).to_pandas()
    for column in ("decision_type", "status", "reason", "proposal", "backend", "device", "instance_type",
                   "candidate", "normalization", "model_identity_sha256"):
        props[column] = props[column].astype("category")
    props["prob_row"] = prob_row
    del table
    outs = (
        pads.dataset(files["outcomes"], schema=OUTCOMES)
        .to_table(columns=["decision_id", "outcome", "outcome_at", "source"])
        .to_pandas()
    )
    outs = outs[(outs.outcome_at <= as_of) & (outs.source != SOURCE_AUDIT)]  # audits are not production's
    outs = outs.sort_values(["decision_id", "outcome_at", "outcome"]).drop_duplicates(
        "decision_id", keep="last"
    )
    d = props.merge(outs[["decision_id", "outcome"]], on="decision_id", how="left")
    day = d.received_at.dt.tz_convert("UTC").dt.normalize()
    d["week"] = (day - pd.to_timedelta(day.dt.weekday, unit="D")).dt.date
    d["model_key"] = model_keys(d)
    d = d.drop(columns=["model_sha256", "quantization", "normalization", "model_identity_sha256"])
    d["scored"] = d.status == "scored"
    d["labelled"] = d.scored & d.outcome.notna()
    d["correct"] = d.proposal == d.outcome
    known = set(matrices_options(matrices))
    typed = d.decision_type.astype(str) + "/" + d.outcome.astype(str)
    d["outside_options"] = d.outcome.notna() & ~typed.isin(known)
    return d, matrices


def matrices_options(matrices: dict[str, tuple[list[str], np.ndarray]]) -> list[str]:
    """``type/option`` for every declared option of every type."""
    return [f"{t}/{o}" for t, (options, _) in matrices.items() for o in options]


def model_keys(d: pd.DataFrame) -> pd.Series:
    """The marts' group, candidate x identity: ``<candidate> <model>/<quant>/<device>/<norm> #<sha12>``.

    Built per distinct combination (a few), then mapped back as a category: no string work per decision.
    """
    parts = ["candidate", "model_name", "quantization", "device", "normalization", "model_identity_sha256",
             "model_sha256"]
    combos = d[parts].astype(object).drop_duplicates().dropna(subset=["model_name"])
    s = combos.astype(str)
    label = (s.candidate + " " + s.model_name + "/" + s.quantization + "/" + s.device + "/" + s.normalization
             + " #" + s.model_identity_sha256.str[:12])
    v1 = s.model_name + "@" + s.model_sha256.str[:12] + "/" + s.quantization
    combos["model_key"] = label.where(combos.model_identity_sha256.notna(), v1)
    keyed = d[parts].astype(object).merge(combos, on=parts, how="left")
    return pd.Series(pd.Categorical(keyed.model_key.to_numpy()), index=d.index)


def paired(lab: pd.DataFrame) -> pd.DataFrame:
    """Two candidates on the decisions both labelled, per type and week.

    Per candidate pair ('*') and per pair of identity keys: counts, accuracies, the difference with its
    paired Wald 95% interval, McNemar's exact p.
    """
    rows = []
    cands = sorted(lab.candidate.dropna().unique())
    for i, a in enumerate(cands):
        for b in cands[i + 1:]:
            left = lab[lab.candidate == a][["decision_id", "decision_type", "week", "model_key", "correct"]]
            right = lab[lab.candidate == b][["decision_id", "model_key", "correct"]]
            both = left.merge(right, on="decision_id", suffixes=("_a", "_b"))
            both["model_key_a"] = both.model_key_a.astype(str)
            both["model_key_b"] = both.model_key_b.astype(str)
            star = both.assign(model_key_a="*", model_key_b="*")
            keys = ["decision_type", "week", "model_key_a", "model_key_b"]
            for frame in (both, star):
                g = frame.assign(ca=frame.correct_a.astype(int), cb=frame.correct_b.astype(int))
                g["only_a"] = (g.ca > g.cb).astype(int)
                g["only_b"] = (g.cb > g.ca).astype(int)
                s = g.groupby(keys, observed=True)[["ca", "cb", "only_a", "only_b"]].agg(["sum", "count"])
                n = s[("ca", "count")].to_numpy(float)
                oa, ob = s[("only_a", "sum")].to_numpy(float), s[("only_b", "sum")].to_numpy(float)
                diff = (ob - oa) / n
                half = 1.959963984540054 * np.sqrt(np.maximum(oa + ob - (ob - oa) ** 2 / n, 0)) / n
                out = s.index.to_frame(index=False).assign(
                    candidate_a=a, candidate_b=b, paired=n, agreement_a=s[("ca", "sum")].to_numpy() / n,
                    agreement_b=s[("cb", "sum")].to_numpy() / n, difference=diff, difference_low=diff - half,
                    difference_high=diff + half,
                    mcnemar_p=np.minimum(1.0, 2 * binom.cdf(np.minimum(oa, ob), oa + ob, 0.5)),
                )
                rows.append(out)
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


def identities(scored: pd.DataFrame) -> pd.DataFrame:
    """Per type, week and key: scored decisions, first and last seen."""
    g = scored.groupby(["decision_type", "week", "model_key"], observed=True).received_at
    return pd.DataFrame({"scored": g.size(), "first_seen": g.min(), "last_seen": g.max()}).reset_index()


def scoped_groups(frame: pd.DataFrame) -> list[tuple[tuple[object, object, str], pd.DataFrame]]:
    """(type, week, model key) groups, then (type, week) groups under '*' (no copy of the whole frame)."""
    per_model = [
        ((t, w, str(m)), g)
        for (t, w, m), g in frame.groupby(["decision_type", "week", "model_key"], observed=True)
    ]
    everyone = [((t, w, "*"), g) for (t, w), g in frame.groupby(["decision_type", "week"], observed=True)]
    return per_model + everyone


def funnel(d: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Funnel counts (per candidate, with the outcomes outside the options) and not-scored reasons."""
    g = d.groupby(["decision_type", "week", "candidate"], observed=True, dropna=False)
    f = pd.DataFrame(
        {
            "offered": g.size(),
            "sampled": g.sampled.sum(),
            "scored": g.scored.sum(),
            "labelled": g.labelled.sum(),
            "outside_options": g.outside_options.sum(),
        }
    )
    f["unjoined"] = f.scored - f.labelled
    f["label_rate"] = f.labelled / f.scored
    reasons = d[~d.scored].groupby(["decision_type", "week", "status", "reason"], dropna=False).size()
    return f.reset_index(), reasons.rename("decisions").reset_index()


def agreement(group: pd.DataFrame) -> dict[str, float]:
    """Agreement, kappa, baseline, confusion size and per-option precision/recall of one group."""
    labels = sorted(set(group.outcome) | set(group.proposal))
    cm = confusion_matrix(group.outcome, group.proposal, labels=labels)
    tp = np.diag(cm)
    with np.errstate(invalid="ignore", divide="ignore"):
        precision, recall = tp / cm.sum(axis=0), tp / cm.sum(axis=1)
    return {
        "agreement": tp.sum() / cm.sum(),
        "kappa": cohen_kappa_score(group.outcome, group.proposal),
        "baseline_agreement": cm.sum(axis=1).max() / cm.sum(),
        "cells": int((cm > 0).sum()),
        "mean_precision": float(np.nanmean(precision)),
        "mean_recall": float(np.nanmean(recall)),
    }


def debiased_ece(n: np.ndarray, conf: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kumar et al.'s debiased ECE and the unbiased squared calibration error from bin sums (..., BINS)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        acc, gap = correct / n, (conf - correct) / n
        var = np.where(n > 1, acc * (1 - acc) / (n - 1), 0.0)
        sd, size = np.sqrt(var), np.abs(gap)
        z = size / sd
        spread = size * erf(z / math.sqrt(2)) + sd * math.sqrt(2 / math.pi) * np.exp(-z * z / 2)
        folded = np.where(sd > 0, spread, size)
        terms = np.where(n > 0, n * (2 * size - folded), 0.0)
        squares = np.where(n > 0, n * (gap * gap - var), 0.0)
    total = n.sum(axis=-1)
    return np.maximum(0.0, terms.sum(axis=-1) / total), squares.sum(axis=-1) / total


def equal_mass_ece(conf: np.ndarray, correct: np.ndarray, block: np.ndarray) -> dict[str, float]:
    """ECE, MCE, the debiased ECE and its block-bootstrap interval on 15 equal-mass bins (bins held fixed)."""
    edges = np.percentile(conf, np.linspace(0, 100, BINS + 1))[1:-1]
    ids = np.searchsorted(edges, conf)
    n = np.bincount(ids, minlength=BINS)
    gap = np.bincount(ids, conf, BINS) - np.bincount(ids, correct, BINS)
    cell = ids * BLOCKS + block
    per_block = [
        np.bincount(cell, values, BINS * BLOCKS).reshape(BINS, BLOCKS)
        for values in (np.ones(conf.size), conf, correct)
    ]
    draws = np.random.default_rng(0).integers(0, BLOCKS, (REPS, BLOCKS))
    weights = np.apply_along_axis(np.bincount, 1, draws, minlength=BLOCKS)
    eces, squares = debiased_ece(*(weights @ sums.T for sums in per_block))
    estimate, square = debiased_ece(*(sums.sum(axis=1) for sums in per_block))
    lo, hi = np.percentile(eces, [2.5, 97.5]) - eces.mean()
    calibrated = square + np.percentile(squares, 2.5) - squares.mean() <= 0
    mask = n > 0
    return {
        "ece": float(np.abs(gap).sum() / conf.size),
        "mce": float((np.abs(gap[mask]) / n[mask]).max()),
        "ece_debiased": float(estimate),
        "ece_low": 0.0 if calibrated else float(max(0.0, min(estimate, estimate + lo))),
        "ece_high": float(max(estimate, estimate + hi)),
    }


def proper_scores(group: pd.DataFrame, options: list[str], matrix: np.ndarray) -> dict[str, float]:
    """Brier (sum over options), log-loss and classwise ECE (15 equal-width bins) of one group."""
    inside = group[group.outcome.isin(options)]
    p = matrix[inside.prob_row.to_numpy()]
    y = (inside.outcome.to_numpy()[:, None] == np.array(options)[None, :]).astype(float)
    p_true = (p * y).sum(axis=1)
    ids = np.clip(np.ceil(p * BINS).astype(int) - 1, 0, BINS - 1) + np.arange(len(options)) * BINS
    gap = np.bincount(ids.ravel(), (p - y).ravel(), BINS * len(options)).reshape(len(options), BINS)
    return {
        "brier": float(((p - y) ** 2).sum(axis=1).mean()),
        "log_loss": float(-np.log(np.maximum(p_true, 1e-15)).mean()),
        "classwise_ece": float((np.abs(gap).sum(axis=1) / len(inside)).mean()),
    }


def cp_lower(x: np.ndarray, n: np.ndarray, alpha: float) -> np.ndarray:
    """One-sided Clopper-Pearson lower bound."""
    return np.where(x > 0, betaincinv(np.maximum(x, 1), n - x + 1, alpha), 0.0)


def thresholds(group: pd.DataFrame, k: int) -> dict[str, float]:
    """Fixed-sequence per-option thresholds, overall coverage and risk, and the risk-coverage curve size."""
    alpha = ALPHA / k
    cells = np.floor(group.proposal_probability.to_numpy() * GRID).astype(int)
    correct = group.correct.to_numpy()
    accepted = np.zeros(len(group), dtype=bool)
    for option in group.proposal.unique():
        mine = group.proposal.to_numpy() == option
        n_ge = np.bincount(cells[mine], minlength=GRID + 1)[::-1].cumsum()[::-1]
        x_ge = np.bincount(cells[mine], correct[mine], GRID + 1)[::-1].cumsum()[::-1].round()
        cand = np.unique(cells[mine])[::-1]
        cand = cand[n_ge[cand] >= math.log(alpha) / math.log(TARGET)]
        passes = cp_lower(x_ge[cand], n_ge[cand], alpha) >= TARGET
        run = np.argmin(passes) if not passes.all() else passes.size
        if run:
            accepted |= mine & (cells >= cand[run - 1])
    curve = np.bincount(cells, minlength=GRID + 1)[::-1].cumsum()[::-1]
    risk = 1 - correct[accepted].mean() if accepted.any() else np.nan
    return {
        "coverage": float(accepted.mean()),
        "selective_risk": float(risk),
        "curve_points": int((curve > 0).sum()),
    }


def psi(a: np.ndarray, e: np.ndarray) -> float:
    """PSI with shares floored at 1e-4."""
    a, e = np.maximum(a, 1e-4), np.maximum(e, 1e-4)
    return float(((a - e) * np.log(a / e)).sum())


def drift(scored: pd.DataFrame, calib: pd.DataFrame) -> pd.DataFrame:
    """Confidence PSI on reference deciles, proposal-mix PSI and the ECE alert, per type, week and model."""
    rows = []
    weeks = sorted(scored.week.unique())
    per_model = [
        ((t, str(m)), g) for (t, m), g in scored.groupby(["decision_type", "model_key"], observed=True)
    ]
    everyone = [((t, "*"), g) for t, g in scored.groupby("decision_type", observed=True)]
    for (decision_type, model_key), grp in per_model + everyone:
        q = np.minimum(np.floor(grp.proposal_probability.to_numpy() * 1000), 999)
        week = grp.week.to_numpy()
        for i, w in enumerate(weeks[1:], start=1):
            ref = np.isin(week, weeks[max(0, i - 4) : i])
            cur = week == w
            if not ref.any() or not cur.any():  # an identity new this week (or gone): no reference
                continue
            edges = np.quantile(q[ref], np.arange(1, 10) / 10, method="inverted_cdf")
            a = np.bincount(np.searchsorted(edges, q[cur]), minlength=10) / cur.sum()
            e = np.bincount(np.searchsorted(edges, q[ref]), minlength=10) / ref.sum()
            mix_c = grp.proposal[cur].value_counts(normalize=True)
            mix_r = (
                grp.proposal[ref]
                .value_counts(normalize=True)
                .reindex(mix_c.index.union(grp.proposal[ref].unique()), fill_value=0)
            )
            reference = calib[
                (calib.decision_type == decision_type)
                & (calib.model_key == model_key)
                & calib.week.isin(weeks[max(0, i - 4) : i])
            ]
            eces = reference.ece
            now = calib[
                (calib.decision_type == decision_type) & (calib.model_key == model_key) & (calib.week == w)
            ]
            above = (now.ece_low > reference.ece_high.max()).any()
            spread = len(eces) < 3 or (now.ece > eces.mean() + 3 * eces.std()).any()
            rows.append(
                {
                    "decision_type": decision_type,
                    "model_key": model_key,
                    "week": w,
                    "confidence_psi": psi(a, e),
                    "proposal_mix_psi": psi(
                        mix_c.reindex(mix_r.index, fill_value=0).to_numpy(), mix_r.to_numpy()
                    ),
                    "ece_alert": bool(above and spread),
                }
            )
    return pd.DataFrame(rows)


def latency_and_cost(scored: pd.DataFrame) -> pd.DataFrame:
    """Exact percentiles, throughput and instance cost per type, week and fleet."""
    g = scored.groupby(["decision_type", "week", "backend", "device", "instance_type"])
    out = g.scorer_ms.quantile([0.5, 0.95, 0.99]).unstack().add_prefix("scorer_p")  # noqa: PD010  (3 columns)
    out = out.join(g.total_ms.quantile([0.5, 0.95, 0.99]).unstack().add_prefix("total_p"))  # noqa: PD010
    out["decisions_per_hour"] = g.size() / 168
    hours = scored.received_at.dt.floor("h")
    out["peak_per_hour"] = (
        scored.groupby(["decision_type", "week", "backend", "device", "instance_type", hours])
        .size()
        .groupby(level=[0, 1, 2, 3, 4])
        .max()
    )
    out["cost_usd"] = (
        g.scorer_ms.sum()
        / 3.6e6
        / 0.5
        * np.asarray(out.index.get_level_values("instance_type").astype(str).map(PRICES), dtype=float)
    )
    return out.reset_index()


def run(root: Path, out: Path, as_of: pd.Timestamp) -> dict[str, int]:
    """Every metric over every week under ``root`` (outcomes known at ``as_of``); write tables to ``out``."""
    d, matrices = load(root, as_of)
    f, reasons = funnel(d)
    lab = d[d.labelled].copy()
    hashed = pd.util.hash_pandas_object(lab.decision_id, index=False).to_numpy()
    lab["block"] = (hashed % np.uint64(BLOCKS)).astype(np.int64)
    calib = pd.DataFrame(
        [
            {"decision_type": t, "week": w, "model_key": m}
            | agreement(g)
            | equal_mass_ece(g.proposal_probability.to_numpy(), g.correct.to_numpy(float), g.block.to_numpy())
            | proper_scores(g, *matrices[str(t)])
            | thresholds(g, len(matrices[str(t)][0]))
            for (t, w, m), g in scoped_groups(lab)
        ]
    )
    severe = lab[
        ~lab.correct
        & (lab.proposal_probability >= 0.8)
        & (lab.decision_type.astype(str) + "/" + lab.proposal.astype(str)).isin(
            [f"{t}/{o}" for t, opts in HIGH.items() for o in opts]
        )
    ]
    scored = d[d.scored]
    results = {
        "funnel": f,
        "reasons": reasons,
        "calibration": calib,
        "severe": severe[["decision_id"]],
        "drift": drift(scored, calib),
        "latency_cost": latency_and_cost(scored),
        "paired": paired(lab),
        "identities": identities(scored),
    }
    out.mkdir(parents=True, exist_ok=True)
    for name, table in results.items():
        table.astype({c: str for c in table.columns if table[c].dtype == object}).to_parquet(
            out / f"{name}.parquet"
        )
    return {name: len(table) for name, table in results.items()}
