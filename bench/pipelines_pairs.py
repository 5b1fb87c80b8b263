"""This tree's DuckDB pipelines job against an older commit's, in interleaved pairs: ratio and interval.

On a shared machine whose speed drifts by 10-25% within minutes, a job's time means little alone. This runs
`bench/pipelines_models.py` (one process per run, the whole job, step by step) alternately for a baseline
tree (A) and this tree (B), in the order A B, B A, A B, ..., so that each pair ran side by side; it then
prints every pair, the medians, the ratio of the medians, the median of the pair ratios with a bootstrap
95% interval, the geometric mean of the pair ratios with its interval, and the median CPU seconds of each
step in both trees. With `--reference-seconds` (the baseline's time where it was first measured), each
ratio is also given as the projected time of this tree.

The baseline is a git revision, checked out in a temporary `git worktree` (removed at the end), or a tree
given with `--baseline-tree`. `--baseline-drop MODEL` leaves models out of the revision's tree, to time what
they cost on the same commit (`--baseline-drop audits`: every audit model). Both trees' `pipelines`
package run under this tree's copy of `bench/pipelines_models.py` (with `PYTHONPATH=<tree>`, as that
script documents).

    .venv/bin/python -P bench/pipelines_pairs.py /tmp/semif-bench-pipelines/records-10000000-zstd \\
        --baseline REV --pairs 16 --reference-seconds SECONDS

The records come from `bench/pipelines.py` (`ensure_data`); 16 pairs at 10M take about 9 minutes here.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

HERE = Path(__file__).resolve().parents[1]
MODELS_SCRIPT = HERE / "bench" / "pipelines_models.py"
RESAMPLES = 10_000
"""Bootstrap resamples of the pairs for the 95% intervals (seeded: reruns on the same runs agree)."""


@dataclass
class Run:
    """One process: the whole job's wall and CPU seconds, peak RSS, and CPU seconds per step."""

    wall: float
    cpu: float
    peak_mib: int
    steps: dict[str, float] = field(default_factory=dict)


def parse(output: str) -> Run:
    """The ``(process)`` line and the step rows of `bench/pipelines_models.py`'s table."""
    steps: dict[str, float] = {}
    for line in output.splitlines():
        fields = line.split()
        if fields[:1] == ["(process)"]:  # wall, CPU, RSS, peak RSS
            return Run(float(fields[1]), float(fields[2]), int(fields[4]), steps)
        # a step: its name (may hold spaces), wall, CPU, RSS, peak RSS, DuckDB MiB
        if len(fields) >= 6 and all(f.replace(".", "", 1).isdigit() for f in fields[-5:]):
            steps[" ".join(fields[:-5])] = float(fields[-4])
    raise ValueError(f"no (process) line in the output:\n{output[-2000:]}")


def run_job(tree: Path, root: Path) -> Run:
    """Time the job once with ``tree``'s ``pipelines`` package; fail with the output if it fails."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(  # noqa: S603  (our own interpreter and script)
        [sys.executable, "-P", str(MODELS_SCRIPT), str(root)],
        cwd=tree, env=env, capture_output=True, text=True, check=False,
    )
    if done.returncode:
        raise SystemExit(f"the job failed in {tree} (exit {done.returncode}):\n{done.stdout[-2000:]}"
                         f"{done.stderr[-2000:]}")
    return parse(done.stdout)


AUDIT_MODELS = (
    "stg_audits", "stg_audit_samples", "int_audited", "int_audit_pairs", "correctness",
    "auditor_agreement", "auditor_disagreements",
)
"""``--baseline-drop audits``: the models that turn audits into marts (production's outcome, read by every
other model, already leaves them out)."""


def drop_models(tree: Path, names: Sequence[str]) -> None:
    """Leave ``names`` out of ``tree``'s model order (``pipelines/sqlmodels.py``, ``ORDER``).

    They are then neither built nor written. Fails if a name is not in the order.
    """
    path = tree / "pipelines" / "sqlmodels.py"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    for name in names:
        entry = [ln for ln in lines if ln.strip().startswith("(") and ln.strip().endswith(f'"{name}"),')]
        if len(entry) != 1:
            raise SystemExit(f"--baseline-drop: {name!r} is not in the model order of {path}")
        lines.remove(entry[0])
    path.write_text("".join(lines), encoding="utf-8")


@contextlib.contextmanager
def baseline_tree(revision: str, drop: Sequence[str] = ()) -> Iterator[Path]:
    """A detached worktree of ``revision`` in a temporary folder, ``drop`` left out; removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="semif-pairs-") as parent:
        path = Path(parent) / "baseline"
        add = ["git", "-C", str(HERE), "worktree", "add", "--detach", "--quiet", str(path), revision]
        subprocess.run(add, check=True)  # noqa: S603  (git on PATH, our own arguments)
        try:
            drop_models(path, drop)
            yield path
        finally:
            remove = ["git", "-C", str(HERE), "worktree", "remove", "--force", str(path)]
            subprocess.run(remove, check=False)  # noqa: S603


def interval(values: Sequence[float], statistic: str) -> tuple[float, float, float]:
    """The statistic (``median`` or ``geometric_mean``) of the values and its bootstrap 95% interval."""
    compute = statistics.median if statistic == "median" else statistics.geometric_mean
    rng = random.Random(1)
    resampled = sorted(compute(rng.choices(values, k=len(values))) for _ in range(RESAMPLES))
    return compute(values), resampled[int(0.025 * RESAMPLES)], resampled[int(0.975 * RESAMPLES) - 1]


def summary(pairs: list[tuple[Run, Run]], reference: float | None) -> list[str]:
    """The lines printed after the runs: medians, ratios with intervals, projections, steps."""
    lines = []
    for label, pick in (("wall s", lambda r: r.wall), ("CPU s", lambda r: r.cpu)):
        a = [pick(p[0]) for p in pairs]
        b = [pick(p[1]) for p in pairs]
        ratios = [y / x for x, y in zip(a, b, strict=True)]
        of_medians = statistics.median(b) / statistics.median(a)
        median, low, high = interval(ratios, "median")
        geo, geo_low, geo_high = interval(ratios, "geometric_mean")
        lines.append(f"{label:7} A {statistics.median(a):7.2f}  B {statistics.median(b):7.2f}  "
                     f"ratio of medians {of_medians:.3f}  median pair {median:.3f} [{low:.3f}, {high:.3f}]  "
                     f"geometric mean {geo:.3f} [{geo_low:.3f}, {geo_high:.3f}]  B faster in "
                     f"{sum(r < 1 for r in ratios)} of {len(ratios)}")
        if reference is not None and label == "wall s":
            ref = reference
            lines.append(f"        projected from A = {ref:g} s: {ref * of_medians:.2f} (ratio of medians), "
                         f"{ref * median:.2f} [{ref * low:.2f}, {ref * high:.2f}] (median pair), "
                         f"{ref * geo:.2f} [{ref * geo_low:.2f}, {ref * geo_high:.2f}] (geometric mean)")
    peak_a, peak_b = [p[0].peak_mib for p in pairs], [p[1].peak_mib for p in pairs]
    lines.append(f"peak RSS MiB: A {min(peak_a):,}-{max(peak_a):,}, B {min(peak_b):,}-{max(peak_b):,}")
    lines.append(f"{'step (median CPU s)':28} {'A':>7} {'B':>7} {'B - A':>7}")
    for step in pairs[0][1].steps:
        a_cpu = statistics.median(p[0].steps.get(step, 0.0) for p in pairs)
        b_cpu = statistics.median(p[1].steps.get(step, 0.0) for p in pairs)
        if max(a_cpu, b_cpu) >= 0.05:  # smaller steps are within the timer's noise
            lines.append(f"{step:28} {a_cpu:7.2f} {b_cpu:7.2f} {b_cpu - a_cpu:+7.2f}")
    return lines


def main() -> None:
    """Run the pairs, print each as it ends, then the summary."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("root", type=Path, help="a records folder made by bench/pipelines.py")
    parser.add_argument("--baseline", help="git revision of tree A (or --baseline-tree)")
    parser.add_argument("--baseline-tree", type=Path, help="an existing checkout to use as tree A instead")
    parser.add_argument("--baseline-drop", action="append", default=[], metavar="MODEL",
                        help="leave this model out of tree A (repeatable; 'audits': every audit model), to "
                             "time what a set of models costs on the same commit")
    parser.add_argument("--pairs", type=int, default=12, help="pairs to run (default 12)")
    parser.add_argument("--reference-seconds", type=float,
                        help="tree A's time where it was first measured: ratios also as projected seconds")
    args = parser.parse_args()
    if not (args.root / "proposals").is_dir():
        parser.error(f"{args.root} has no proposals/ folder: generate it with bench/pipelines.py")
    if args.pairs < 2:
        parser.error("--pairs must be at least 2")
    if not (args.baseline or args.baseline_tree):
        parser.error("name tree A: --baseline REV or --baseline-tree DIR")

    if args.baseline_drop and not args.baseline:
        parser.error("--baseline-drop needs --baseline REV (it edits the temporary worktree)")
    drop = [m for name in args.baseline_drop for m in (AUDIT_MODELS if name == "audits" else (name,))]
    tree = (contextlib.nullcontext(args.baseline_tree) if args.baseline_tree
            else baseline_tree(args.baseline, drop))
    with tree as baseline:
        dropped = f" without {', '.join(drop)}" if drop else ""
        print(f"A = {args.baseline_tree or args.baseline}{dropped}, B = {HERE}; load average "
              f"{os.getloadavg()[0]:.1f}", flush=True)
        pairs = []
        for index in range(args.pairs):
            order = ("A", "B") if index % 2 == 0 else ("B", "A")
            runs = {name: run_job(baseline if name == "A" else HERE, args.root) for name in order}
            a, b = runs["A"], runs["B"]
            pairs.append((a, b))
            print(f"pair {index + 1:3} ({' '.join(order)}): A {a.wall:6.2f} s {a.cpu:6.2f} CPU-s  "
                  f"B {b.wall:6.2f} s {b.cpu:6.2f} CPU-s  B/A {b.wall / a.wall:.3f}  "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    print("\n".join(summary(pairs, args.reference_seconds)))


if __name__ == "__main__":
    main()
