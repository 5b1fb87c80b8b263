"""The audited gate's operating characteristics on the shipped path, many decision types as replicates.

    .venv/bin/python -m bench.audited_sim                          # 2,000 types, one look at the margin
    .venv/bin/python -m bench.audited_sim --weeks 6 --types 400    # six weekly looks
    .venv/bin/python -m bench.audited_sim --shift 0                # the candidate as good as production

Each decision type is one replicate: ``--decisions`` decisions a week, production wrong on ``--production-
error`` of them, the candidate wrong on that plus ``--shift`` (``--margin`` by default: exactly at the margin,
where a pass is false), copying production's answer on ``--copy`` of the decisions (so it shares its
mistakes there) and erring independently elsewhere. Every week: the records are written (the records
contract, as the sidecar writes them), ``semif-shadow audit sample`` draws each type's sample with its
defaults, a simulated auditor answers it with the truth (wrong on ``--auditor-error`` of its answers), and
``semif-shadow pipelines run`` builds the marts; then the review's gate (``dashboards.verdict.audited.
gate``, which ``judge()`` applies with every other rule) is applied to every type and week, and ``judge()``
itself to the first types. The table: how often the gate passed (per look and at any look), and how often
the ``audited_difference`` mart's 95% intervals held the true rates (production's, the candidate's, and
their difference).
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from bench.simrecords import FIRST_MONDAY, OPTIONS, TypeWeek, invoke, week_label, write_type_week
from dashboards.config import ReviewConfig
from dashboards.marts import load_marts
from dashboards.verdict import audited
from dashboards.verdict.decision import judge
from dashboards.verdict.evidence import gather
from pipelines import synth
from pipelines.generate import WRITER, write_whole
from pipelines.generate_audits import answer, audit_rows
from pipelines.storage import open_root


@dataclass(frozen=True)
class Setup:
    """One simulation (the command's options)."""

    types: int = 2000
    decisions: int = 1000
    weeks: int = 1
    production_error: float = 0.10
    shift: float = 0.02
    copy: float = 0.5
    auditor_error: float = 0.0
    margin: float = 0.02
    confidence: float = 0.95
    """The review's ``confidence`` (the gate's level is (1 - this) / 2, spent over looks)."""
    seed: int = 11
    decide_types: int = 20


FLAGS = ("--types", "--decisions", "--weeks", "--production-error", "--shift", "--copy", "--auditor-error",
         "--margin", "--confidence", "--seed", "--decide-types")
"""The command's options: one per ``Setup`` field."""


@dataclass
class Result:
    """Per type and look: whether the gate passed; per mart row: whether each interval held the truth."""

    passed: np.ndarray
    waited_on_auditors: np.ndarray
    """Per type and look: the gate waited because the auditors disagree too often."""
    covered: dict[str, list[bool]] = field(default_factory=dict)
    explained: dict[str, list[bool]] = field(default_factory=dict)
    """Per interval: it held the truth, or the gate waited on auditor error and said so."""
    decided: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def _decisions(rng: np.random.Generator, setup: Setup, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(truth, production's outcome, the candidate's proposal) as option indices."""
    k = len(OPTIONS)
    truth = rng.integers(0, k, n)
    production = np.where(rng.random(n) < setup.production_error, (truth + rng.integers(1, k, n)) % k, truth)
    own = (setup.production_error + setup.shift - setup.copy * setup.production_error) / (1 - setup.copy)
    alone = np.where(rng.random(n) < own, (truth + rng.integers(1, k, n)) % k, truth)
    return truth, production, np.where(rng.random(n) < setup.copy, production, alone)


def write_week(root: Path, setup: Setup, week: int, truths: np.ndarray) -> None:
    """Every type's proposals and production's outcomes of one week (all received on its Wednesday)."""
    n = setup.decisions
    for t in range(setup.types):
        rng = np.random.default_rng([setup.seed, week, t])
        first = (week * setup.types + t) * n
        truth, production, proposal = _decisions(rng, setup, n)
        truths[first:first + n] = truth
        p = np.full((n, len(OPTIONS)), 0.1)
        p[np.arange(n), proposal] = 0.6
        write_type_week(str(root), TypeWeek(f"t{t:05d}", week, first, truth, production, p), rng)


def answer_week(root: Path, setup: Setup, week: int, truths: np.ndarray) -> None:
    """Draw the week's samples (``audit sample``, its defaults) and answer each with the truth."""
    label = week_label(week)
    invoke(["audit", "sample", "--root", str(root), "--week", label, "--seed", str(setup.seed)])
    store = open_root(str(root))
    auditor = synth.AuditKnobs(error_rate=setup.auditor_error)
    at = dt.datetime.combine(FIRST_MONDAY + dt.timedelta(weeks=week, days=9), dt.time(), dt.UTC)
    for t in range(setup.types):
        name = f"t{t:05d}"
        sample = pq.read_table(root / "audit_samples" / f"week={label}" / f"decision_type={name}" /
                               "part-0.parquet")
        rng = np.random.default_rng([setup.seed, 7, week, t])
        rows = audit_rows(answer(rng, sample, truths, list(OPTIONS), auditor), name, list(OPTIONS),
                          int(at.timestamp()) * 1_000_000)
        write_whole(store, store.join("outcomes", f"decision_type={name}", f"date={at.date().isoformat()}"),
                    f"{WRITER}-audit-{week:04d}.parquet", rows)


def truths_of(setup: Setup) -> dict[str, float]:
    """The process's rates the intervals must hold."""
    return {"production": 1 - setup.production_error, "candidate": 1 - setup.production_error - setup.shift,
            "diff": -setup.shift}


def review_week(out: Path, setup: Setup, week: int, result: Result, config: ReviewConfig) -> None:
    """Apply the gate to every type in ``week``; check the mart's intervals; ``judge()`` the first types."""
    marts = load_marts(str(out), week_label(week))
    truth = truths_of(setup)
    rows = marts.of_week("audited_difference")
    checks: list[tuple[str, dict[str, bool]]] = []
    for column, key in (("production", "production"), ("candidate", "candidate"), ("diff", "diff")):
        value = "diff" if key == "diff" else f"{key}_correctness"
        low, high = ("diff_low", "diff_high") if key == "diff" else (f"{key}_low", f"{key}_high")
        held = (rows[low] <= truth[column]) & (truth[column] <= rows[high]) & rows[value].notna()
        result.covered.setdefault(column, []).extend(held.tolist())
        held_by_type = dict(zip(rows["decision_type"], held, strict=True))
        checks.append((column, held_by_type))
    for t in range(setup.types):
        name = f"t{t:05d}"
        (candidate,) = marts.candidates(name)
        found = audited.gate(marts, name, candidate, config)
        gates = [] if found is None else [found]
        result.passed[t, week] = bool(gates) and all(k.passed for k in gates)
        result.waited_on_auditors[t, week] = any("auditors disagree" in k.detail for k in gates)
        for column, held_by_type in checks:
            result.explained.setdefault(column, []).append(
                bool(held_by_type.get(name)) or bool(result.waited_on_auditors[t, week]))
        if t < setup.decide_types:
            evidence = gather(marts, name, candidate, config.min_coverage)
            verdict = judge(marts, name, candidate, evidence, config)
            result.decided.append(str(verdict.decision))
            result.reasons += [r for r in verdict.reasons if audited.RULE in r]


def simulate(setup: Setup, folder: Path, config: ReviewConfig | None = None) -> Result:
    """Write, sample, answer, run and review every week of ``setup`` under ``folder``."""
    config = config or ReviewConfig(correctness_margin=setup.margin, confidence=setup.confidence)
    root, out = folder / "records", folder / "marts"
    truths = np.zeros(setup.weeks * setup.types * setup.decisions, np.int64)
    result = Result(np.zeros((setup.types, setup.weeks), bool), np.zeros((setup.types, setup.weeks), bool))
    as_of = (FIRST_MONDAY + dt.timedelta(weeks=setup.weeks + 3)).isoformat() + "T00:00:00Z"
    for week in range(setup.weeks):
        write_week(root, setup, week, truths)
        answer_week(root, setup, week, truths)
        invoke(["pipelines", "run", "--root", str(root), "--week", week_label(week), "--out", str(out),
                 "--as-of", as_of])
        review_week(out, setup, week, result, config)
    return result


def standard_error(share: float, n: int) -> float:
    """The binomial standard error of a share from ``n`` replicates."""
    return math.sqrt(max(share * (1 - share), 1e-12) / n)


def table(setup: Setup, result: Result) -> str:
    """The operating characteristics (Markdown)."""
    rows: list[tuple[str, np.ndarray]] = [
        *((f"gate passed at look {week + 1}", result.passed[:, week]) for week in range(setup.weeks)),
        (f"gate passed at any of {setup.weeks} looks", result.passed.any(axis=1)),
        *((f"95% interval of {name} held the truth", np.asarray(held))
          for name, held in result.covered.items()),
    ]
    if setup.auditor_error or result.waited_on_auditors.any():
        rows.append(("gate waited on auditor error", result.waited_on_auditors.ravel()))
        rows += [(f"{name}: interval held or the gate waited on auditor error", np.asarray(ok))
                 for name, ok in result.explained.items()]
    lines = ["| measure | share | ± se | replicates |", "|---|---:|---:|---:|"]
    for label, flags in rows:
        share = float(flags.mean())
        lines.append(f"| {label} | {share:.2%} | {standard_error(share, flags.size):.2%} | {flags.size:,} |")
    return "\n".join(lines)


def main() -> None:
    """Run the simulation with the command's options; print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag in FLAGS:
        value = getattr(Setup(), flag[2:].replace("-", "_"))
        parser.add_argument(flag, type=type(value), default=value)
    setup = Setup(**vars(parser.parse_args()))
    print(f"{setup.types:,} decision types x {setup.weeks} weeks, {setup.decisions:,} decisions a week; "
          f"production wrong {setup.production_error:.0%}, the candidate {setup.shift:+.0%} more "
          f"(copying production on {setup.copy:.0%}); auditor wrong {setup.auditor_error:.0%}; "
          f"margin {setup.margin}, confidence {setup.confidence}")
    with tempfile.TemporaryDirectory() as folder:
        result = simulate(setup, Path(folder))
    print(table(setup, result))


if __name__ == "__main__":
    main()
