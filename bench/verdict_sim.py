"""The whole verdict's operating characteristics on the shipped path, many decision types as replicates.

    .venv/bin/python -m bench.verdict_sim                            # false go: 26 weekly looks at the target
    .venv/bin/python -m bench.verdict_sim --shift 0.02 --weeks 6     # power: the target + 0.02, 6 weeks

Each decision type is one replicate, ``--labelled`` decisions a week, every one labelled by production's
outcome a hour later and scored with a confidence drawn evenly from 0.90-0.99 (the precision is the same at
every confidence, so whatever thresholds are chosen, the accepted decisions' precision is the week's).

- **Week 0** (the policy's week): the candidate is right on ``--choice-precision`` of the decisions.
  ``semif-shadow pipelines run`` builds its marts and ``pipelines.policy.choose`` (what ``semif-shadow
  pipelines policy choose`` runs, here once per type on one connection) writes each type's policy file.
- **Weeks 1..``--weeks``**: the candidate is right on ``--target`` + ``--shift`` of the decisions. Each
  week: the records are written, ``semif-shadow pipelines run --policy ...`` (every type's policy) builds
  the marts and the evidence ledger at the policy, as of the Friday after the week ends (mature); then the
  review's path: the policies replayed on the week (``dashboards.policies.replay_policies``), the evidence
  gathered and ``judge()`` applied to every type, as ``semif-shadow review`` does.

With ``--shift 0`` the precision is exactly the target: a go is false. The table: how often the verdict went
go (per look, at any look, and by week ``--within``) and which rules held the others back.
"""

from __future__ import annotations

import argparse
import datetime as dt
import math
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.simrecords import FIRST_MONDAY, OPTIONS, TypeWeek, invoke, week_label, write_type_week
from dashboards.config import ReviewConfig
from dashboards.marts import load_marts
from dashboards.policies import replay_policies
from dashboards.verdict.decision import PRECISION, Decision, judge
from dashboards.verdict.evidence import gather
from pipelines.policy import choose
from pipelines.policy_cli import settings_for, week_connection


@dataclass(frozen=True)
class Setup:
    """One simulation (the command's options)."""

    types: int = 1000
    labelled: int = 1000
    weeks: int = 26
    target: float = 0.95
    shift: float = 0.0
    choice_precision: float = 1.0
    within: int = 6
    confidence: float = 0.95
    """The review's ``confidence`` (each anytime-valid bound is one-sided at (1 - this) / 2)."""
    seed: int = 5


FLAGS = ("--types", "--labelled", "--weeks", "--target", "--shift", "--choice-precision", "--within",
         "--confidence", "--seed")
"""The command's options: one per ``Setup`` field."""

LAG_DAYS = 3
"""``PIPELINES_MATURITY_LAG_DAYS``' default: a week is reviewed the Friday after it ends (mature)."""


@dataclass
class Result:
    """Per type and look: the decision and the ledger's counts; the rules that failed on every non-go."""

    decisions: np.ndarray
    precision_passed: np.ndarray
    ledger: np.ndarray
    """(types, weeks, 2): the ledger's accepted correct and accepted labelled at the look."""
    thresholds: list[dict[str, int | None]] = field(default_factory=list)
    """Per type: the policy's grid index per option (None: never accepted)."""
    held_back: Counter[str] = field(default_factory=Counter)
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall seconds per phase: write, run, replay and review."""

    def spent(self, phase: str, started: float) -> None:
        """Add the wall time since ``started`` (``time.perf_counter``) to ``phase``."""
        self.seconds[phase] = self.seconds.get(phase, 0.0) + time.perf_counter() - started

    def went_go(self) -> np.ndarray:
        """Per type and look: the verdict was go."""
        return np.asarray(self.decisions == "go", dtype=bool)


def type_name(t: int) -> str:
    """The name of replicate ``t``."""
    return f"t{t:05d}"


def draw(setup: Setup, week: int, t: int) -> tuple[TypeWeek, np.random.Generator]:
    """One type's week: outcomes even over the options, the candidate right at the week's precision."""
    rng = np.random.default_rng([setup.seed, week, t])
    n, k = setup.labelled, len(OPTIONS)
    precision = setup.choice_precision if week == 0 else setup.target + setup.shift
    truth = rng.integers(0, k, n)
    right = rng.random(n) < precision
    proposal = np.where(right, truth, (truth + rng.integers(1, k, n)) % k)
    confidence = rng.uniform(0.90, 0.99, n)
    p = np.repeat(((1 - confidence) / (k - 1))[:, None], k, axis=1)
    p[np.arange(n), proposal] = confidence
    first = (week * setup.types + t) * n
    return TypeWeek(type_name(t), week, first, truth, truth, p), rng


def write_week(root: Path, setup: Setup, week: int) -> None:
    """Every type's records of one week."""
    for t in range(setup.types):
        tw, rng = draw(setup, week, t)
        write_type_week(str(root), tw, rng)


def as_of(week: int) -> str:
    """The review's instant of ``week``: the Friday after it ends, when it is mature."""
    day = FIRST_MONDAY + dt.timedelta(weeks=week, days=7 + LAG_DAYS + 1)
    return f"{day.isoformat()}T00:00:00+00:00"


def choose_policies(root: Path, setup: Setup, folder: Path, result: Result) -> list[Path]:
    """Week 0's policy of every type (``pipelines.policy.choose`` on one run over week 0)."""
    con = week_connection(settings_for(None), str(root), week_label(0), as_of(0))
    paths = []
    try:
        for t in range(setup.types):
            chosen = choose(con, type_name(t), week=week_label(0), candidate="default", identity=None,
                            abstain_action="review")
            path = folder / f"{type_name(t)}.json"
            path.write_text(chosen.dumps())
            paths.append(path)
            result.thresholds.append({o["option_id"]: o["grid_index"] for o in chosen.options})
    finally:
        con.close()
    return paths


def review_week(folder: Path, setup: Setup, week: int, policies: list[Path], result: Result) -> None:
    """The review of ``week``: the policies replayed, every type's evidence gathered and judged."""
    root, out = folder / "records", folder / "marts"
    config = ReviewConfig(precision_target=setup.target, confidence=setup.confidence)
    label = week_label(week)
    started = time.perf_counter()
    replayed = {r.key: r for r in replay_policies(policies, str(root), label, as_of=as_of(week))}
    result.spent("replay", started)
    started = time.perf_counter()
    marts = load_marts(str(out), label)
    for t in range(setup.types):
        name = type_name(t)
        (candidate,) = marts.candidates(name)
        evidence = gather(marts, name, candidate, config.min_coverage, replayed.get((name, candidate)))
        verdict = judge(marts, name, candidate, evidence, config)
        look = week - 1
        result.decisions[t, look] = str(verdict.decision)
        result.precision_passed[t, look] = next(k.passed for k in verdict.checks if k.rule == PRECISION)
        result.ledger[t, look] = (evidence.ledger.accepted_correct, evidence.ledger.accepted_labelled)
        if verdict.decision != Decision.GO:
            result.held_back.update(k.rule for k in verdict.failing)
    result.spent("review", started)


def simulate(setup: Setup, folder: Path) -> Result:
    """Week 0 and its policies, then every week written, run and reviewed, under ``folder``."""
    root, out = folder / "records", folder / "marts"
    (folder / "policies").mkdir(parents=True, exist_ok=True)
    result = Result(
        decisions=np.full((setup.types, setup.weeks), "", dtype=object),
        precision_passed=np.zeros((setup.types, setup.weeks), bool),
        ledger=np.zeros((setup.types, setup.weeks, 2), np.int64),
    )
    write_week(root, setup, 0)
    policies = choose_policies(root, setup, folder / "policies", result)
    for week in range(1, setup.weeks + 1):
        started = time.perf_counter()
        write_week(root, setup, week)
        result.spent("write", started)
        started = time.perf_counter()
        invoke(["pipelines", "run", "--root", str(root), "--week", week_label(week), "--out", str(out),
                "--as-of", as_of(week), *(arg for path in policies for arg in ("--policy", str(path)))])
        result.spent("run", started)
        review_week(folder, setup, week, policies, result)
        go = float((result.decisions[:, week - 1] == "go").mean())
        print(f"week {week}/{setup.weeks} reviewed: go {go:.1%}; "
              + ", ".join(f"{k} {v:.0f} s" for k, v in result.seconds.items()), file=sys.stderr, flush=True)
    return result


def standard_error(share: float, n: int) -> float:
    """The binomial standard error of a share from ``n`` replicates."""
    return math.sqrt(max(share * (1 - share), 1e-12) / n)


def table(setup: Setup, result: Result) -> str:
    """The operating characteristics (Markdown)."""
    go = result.went_go()
    within = min(setup.within, setup.weeks)
    rows: list[tuple[str, np.ndarray]] = [
        *((f"go at look {week + 1}", go[:, week]) for week in range(setup.weeks)),
        (f"go by look {within}", np.asarray(go[:, :within].any(axis=1))),
        (f"go at any of {setup.weeks} looks", np.asarray(go.any(axis=1))),
        (f"rejected at any of {setup.weeks} looks", np.asarray((result.decisions == "reject").any(axis=1))),
    ]
    lines = ["| measure | share | ± se | replicates |", "|---|---:|---:|---:|"]
    for label, flags in rows:
        share = float(flags.mean())
        lines.append(f"| {label} | {share:.2%} | {standard_error(share, flags.size):.2%} | {flags.size:,} |")
    looks = result.decisions.size - int(go.sum())
    held = ", ".join(f"{rule} {n / looks:.0%}" for rule, n in result.held_back.most_common()) or "none"
    return "\n".join([*lines, "", f"rules failing on the {looks:,} looks that were not go: {held}"])


def main() -> None:
    """Run the simulation with the command's options; print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag in FLAGS:
        value = getattr(Setup(), flag[2:].replace("-", "_"))
        parser.add_argument(flag, type=type(value), default=value)
    setup = Setup(**vars(parser.parse_args()))
    print(f"{setup.types:,} decision types x {setup.weeks} weekly looks, {setup.labelled:,} labelled "
          f"decisions a week; precision {setup.target + setup.shift:.3f} against the target {setup.target} "
          f"(policy chosen on week 0 at {setup.choice_precision}); confidence {setup.confidence}")
    with tempfile.TemporaryDirectory() as folder:
        result = simulate(setup, Path(folder))
    print(table(setup, result))


if __name__ == "__main__":
    main()
