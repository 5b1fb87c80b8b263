"""Independent references for the tests.

The records read with pyarrow and pandas (no DuckDB), and the metrics computed with numpy, scikit-learn, scipy
and statsmodels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import pyarrow.dataset as pads
from scipy.stats import foldnorm
from statsmodels.stats.proportion import proportion_confint

from contracts.records import OUTCOMES, PROPOSALS

if TYPE_CHECKING:
    import datetime as dt
    from collections.abc import Mapping
    from pathlib import Path


@dataclass
class Records:
    """Proposals joined with their latest known outcome; ``labelled`` are scored rows with an outcome."""

    decisions: pd.DataFrame
    outcomes: pd.DataFrame

    @property
    def labelled(self) -> pd.DataFrame:
        """Scored decisions with an outcome."""
        d = self.decisions
        return d[(d.status == "scored") & d.outcome.notna()]


def read(root: Path, name: str) -> pd.DataFrame:
    """Every file of one records dataset, read by pyarrow with the schema from contracts.records."""
    files = sorted(str(p) for p in (root / name).rglob("*.parquet"))
    schema = PROPOSALS if name == "proposals" else OUTCOMES
    return pads.dataset(files, schema=schema, format="parquet").to_table().to_pandas()


def load_records(root: Path, as_of: dt.datetime) -> Records:
    """Proposals left-joined with the latest outcome known at ``as_of`` (ties: the larger outcome id)."""
    proposals = read(root, "proposals")
    outcomes = read(root, "outcomes")
    outcomes = outcomes[outcomes.outcome_at <= pd.Timestamp(as_of)]
    latest = outcomes.sort_values(["decision_id", "outcome_at", "outcome"]).drop_duplicates(
        "decision_id", keep="last"
    )[["decision_id", "outcome"]]
    decisions = proposals.merge(latest, on="decision_id", how="left")
    iso = decisions.received_at.dt.isocalendar()
    decisions["week"] = iso.year.astype(str) + "-W" + iso.week.astype(str).str.zfill(2)
    decisions["model_key"] = model_keys(decisions)
    return Records(decisions, outcomes)


def model_keys(d: pd.DataFrame) -> pd.Series:
    """The marts' group: candidate and identity, ``<candidate> <model>/<quant>/<device>/<norm> #<sha12>``.

    v1 rows (no identity) keep the v1 key ``<model>@<sha12>/<quant>``.
    """
    v1 = d.model_name + "@" + d.model_sha256.str[:12] + "/" + d.quantization.fillna("")
    label = (d.candidate.fillna("") + " " + d.model_name.fillna("") + "/" + d.quantization.fillna("")
             + "/" + d.device.fillna("") + "/" + d.normalization.fillna("")
             + " #" + d.model_identity_sha256.str[:12])
    return label.where(d.model_identity_sha256.notna(), v1)


def scope(frame: pd.DataFrame, decision_type: str, week: str, model_key: str = "*") -> pd.DataFrame:
    """The rows of one mart group ('*' = every model)."""
    rows = frame[(frame.decision_type == decision_type) & (frame.week == week)]
    return rows if model_key == "*" else rows[rows.model_key == model_key]


def matching(frame: pd.DataFrame, row: Mapping[str, object], *columns: str) -> pd.DataFrame:
    """The rows of ``frame`` whose ``columns`` equal the mart row's (e.g. a latency row's fleet)."""
    mask = np.ones(len(frame), dtype=bool)
    for column in columns:
        mask &= (frame[column] == row[column]).to_numpy()
    return frame[mask]


def equal_mass_bins(confidence: np.ndarray, bins: int) -> np.ndarray:
    """Sklearn's calibration_curve(strategy="quantile") bin ids, computed the same way with numpy."""
    edges = np.percentile(confidence, np.linspace(0, 100, bins + 1))
    return np.searchsorted(edges[1:-1], confidence)


def top_label_ece(confidence: np.ndarray, correct: np.ndarray, bins: int) -> float:
    """Top-label ECE over equal-mass bins: sum over bins of |sum(conf) - sum(correct)| / n."""
    ids = equal_mass_bins(confidence, bins)
    gap = np.bincount(ids, weights=confidence, minlength=bins) - np.bincount(
        ids, weights=correct, minlength=bins
    )
    return float(np.abs(gap).sum() / confidence.size)


def bin_sums(ids: np.ndarray, confidence: np.ndarray, correct: np.ndarray, bins: int) -> np.ndarray:
    """Per bin: decisions, sum of confidences, correct (three rows of a (3, bins) array)."""
    return np.vstack([
        np.bincount(ids, minlength=bins),
        np.bincount(ids, weights=confidence, minlength=bins),
        np.bincount(ids, weights=correct, minlength=bins),
    ])


def debiased_ece(sums: np.ndarray) -> float:
    """Kumar et al. 2019's normal-debiased ECE from bin sums: sum n (2|g| - E|N(g, s^2)|) / N, floored at 0.

    E|N(g, s^2)| is scipy's folded-normal mean; s^2 = acc (1 - acc) / (n - 1), g = mean confidence - acc.
    """
    n, conf, correct = sums[:, sums[0] > 0]
    gap, acc = (conf - correct) / n, correct / n
    sd = np.sqrt(np.where(n > 1, acc * (1 - acc) / np.maximum(n - 1, 1), 0.0))
    spread = sd > 0
    folded = np.abs(gap)
    folded[spread] = foldnorm.mean(np.abs(gap[spread]) / sd[spread], scale=sd[spread])
    return max(0.0, float(np.sum(n * (2 * np.abs(gap) - folded)) / n.sum()))


def squared_calibration_error(sums: np.ndarray) -> float:
    """The unbiased estimate of the squared calibration error: sum n (g^2 - acc (1 - acc) / (n - 1)) / N."""
    n, conf, correct = sums[:, sums[0] > 0]
    gap, acc = (conf - correct) / n, correct / n
    variance = np.where(n > 1, acc * (1 - acc) / np.maximum(n - 1, 1), 0.0)
    return float(np.sum(n * (gap**2 - variance)) / n.sum())


def psi(actual: np.ndarray, expected: np.ndarray, floor: float = 1e-4) -> float:
    """Population stability index of two share vectors, shares floored at ``floor``."""
    a, e = np.maximum(actual, floor), np.maximum(expected, floor)
    return float(np.sum((a - e) * np.log(a / e)))


def confidence_psi(
    current: np.ndarray, reference: np.ndarray, bins: int = 10, resolution: int = 1000
) -> float:
    """PSI of confidences quantized to 1/resolution, on the reference's inverted-CDF quantile bins."""
    cur = np.minimum(np.floor(current * resolution), resolution - 1)
    ref = np.minimum(np.floor(reference * resolution), resolution - 1)
    edges = np.quantile(ref, np.arange(1, bins) / bins, method="inverted_cdf")
    a = np.bincount(np.searchsorted(edges, cur, side="left"), minlength=bins) / cur.size
    e = np.bincount(np.searchsorted(edges, ref, side="left"), minlength=bins) / ref.size
    return psi(a, e)


def probability_matrix(rows: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    """The rows' probabilities as an (n.

    K) matrix with columns in sorted option order (as scikit-learn expects), and those option ids (the same on
    every row here).
    """
    options = list(rows.option_ids.iloc[0])
    order = np.argsort(options)
    return np.vstack(rows.probabilities.to_numpy())[:, order], [options[i] for i in order]


WEEKS = ["2026-W44", "2026-W45", "2026-W46", "2026-W47", "2026-W48"]
"""The generated weeks (`pipelines.synth`), oldest first."""


def reference_rows(frame: pd.DataFrame, decision_type: str, week: str, model_key: str) -> pd.DataFrame:
    """The rows of the (up to) four weeks before ``week``."""
    before = WEEKS[max(0, WEEKS.index(week) - 4) : WEEKS.index(week)]
    rows = frame[(frame.decision_type == decision_type) & frame.week.isin(before)]
    return rows if model_key == "*" else rows[rows.model_key == model_key]


def current_rows(frame: pd.DataFrame, decision_type: str, week: str, model_key: str) -> pd.DataFrame:
    """The rows of ``week`` itself."""
    rows = frame[(frame.decision_type == decision_type) & (frame.week == week)]
    return rows if model_key == "*" else rows[rows.model_key == model_key]


def expected_threshold(
    rows: pd.DataFrame, alpha: float, target: float, grid: int
) -> dict[str, object] | None:
    """Fixed-sequence Clopper-Pearson search, written with numpy and statsmodels."""
    cells = np.floor(rows.proposal_probability.to_numpy() * grid).astype(int)
    correct = (rows.proposal == rows.outcome).to_numpy()
    candidates = np.unique(cells)[::-1]
    n_at_or_above = np.bincount(cells, minlength=grid + 1)[::-1].cumsum()[::-1]
    x_at_or_above = np.bincount(cells, weights=correct, minlength=grid + 1)[::-1].cumsum()[::-1]
    n, x = n_at_or_above[candidates], x_at_or_above[candidates].round().astype(int)
    eligible = n >= math.log(alpha) / math.log(target)
    candidates, n, x = candidates[eligible], n[eligible], x[eligible]
    if not candidates.size:
        return None
    lower = np.nan_to_num(proportion_confint(x, n, alpha=2 * alpha, method="beta")[0])
    failed = np.flatnonzero(lower < target)
    passed = failed[0] if failed.size else candidates.size  # how many pass before the first failure
    if passed == 0:
        return None
    i = passed - 1
    return {
        "grid_index": candidates[i],
        "accepted": n[i],
        "accepted_correct": x[i],
        "precision_lower": lower[i],
    }


def reference_accepted(records: Records, alpha: float, target: float, grid: int = 100) -> pd.Series:
    """Which scored decisions a per-option threshold accepts, every threshold found by `expected_threshold`.

    Per decision type, week, model and proposed option, on the labelled decisions with the Bonferroni
    alpha / options; applied to every scored decision of that group (a boolean per scored row).
    """
    scored = records.decisions[records.decisions.status == "scored"]
    cells = np.floor(scored.proposal_probability.to_numpy() * grid)
    accepted = np.zeros(len(scored), dtype=bool)
    for (decision_type, week, model_key), group in records.labelled.groupby(
        ["decision_type", "week", "model_key"]
    ):
        options = len(group.option_ids.iloc[0])
        for option, rows in group.groupby("proposal"):
            found = expected_threshold(rows, alpha / options, target, grid)
            if found is None:
                continue
            accepted |= (
                (scored.decision_type == decision_type) & (scored.week == week)
                & (scored.model_key == model_key) & (scored.proposal == option)
            ).to_numpy() & (cells >= found["grid_index"])
    return pd.Series(accepted, index=scored.index)
