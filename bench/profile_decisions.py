"""Where `int_decisions` (the job's largest step) spends its CPU: DuckDB's profiler, operator by operator.

Builds the staging views and `int_decisions` exactly as the job does (one decision type at a time, on data
that `bench/pipelines.py` generated), with `profiling_mode = 'detailed'` on each type's statement, and
prints each operator's CPU seconds (summed over DuckDB's threads) with its row count, one tree per type.
`--models DIR` builds `DIR/<model>.sql` in place of a model of that name, to see what a change would cost.

    .venv/bin/python -P bench/profile_decisions.py /tmp/semif-bench-pipelines/records-10000000-zstd
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.append(str(Path(__file__).resolve().parents[1]))

from bench.pipelines import AS_OF, SINCE, UNTIL
from pipelines import runner
from pipelines.prices import load_prices
from pipelines.settings import PipelineSettings
from pipelines.source import register_window
from pipelines.sqlmodels import load_models
from pipelines.storage import open_root
from pipelines.weeks import window

MIN_SECONDS = 0.05
"""Operators below this many CPU seconds are left out of the printed tree (their time is in the total)."""


def profile(root: Path, models_dir: Path | None, out: Path) -> list[Path]:
    """Build the staging views and ``int_decisions`` with the profiler on; one JSON profile per type."""
    settings = PipelineSettings()
    span = window(SINCE, UNTIL, settings.reference_weeks, AS_OF, dt.timedelta(days=3))
    con = runner.connect(settings)
    runner.bind_config(con, settings, span, load_prices(settings.prices_file))
    files = register_window(con, open_root(str(root)), span.read_start, span.read_end, span.as_of)
    models = {m.name: m for m in load_models()}
    if models_dir is not None:
        models = {
            name: replace(m, sql=(models_dir / f"{name}.sql").read_text(encoding="utf-8").strip())
            if (models_dir / f"{name}.sql").exists() else m
            for name, m in models.items()
        }
    for name, model in models.items():
        if name.startswith("stg_"):
            con.execute(model.create_statement())
    decisions = models[runner.BUILT_BY_TYPE]
    written = []
    with runner.optimizers_off(con, runner.BUILT_BY_TYPE):  # as the job builds it
        for index, decision_type in enumerate(files.types_largest_first()):
            files.register(con, decision_type)
            path = out / f"{runner.BUILT_BY_TYPE}-{decision_type}.json"
            con.execute("pragma enable_profiling = 'json'")
            con.execute("pragma profiling_mode = 'detailed'")
            con.execute(f"pragma profiling_output = '{path}'")
            con.execute(decisions.create_statement() if index == 0 else decisions.insert_statement())
            con.execute("pragma disable_profiling")
            written.append(path)
    return written


def operator_lines(node: dict[str, Any], depth: int = 0, floor: float = MIN_SECONDS) -> list[str]:
    """``CPU-s  operator rows=N  detail`` for the node and its descendants of ``floor`` CPU-s or more."""
    lines = []
    if node.get("timing", 0.0) >= floor:
        detail = json.dumps(node.get("extra_info", {}))[:90]
        lines.append(f"{node.get('timing', 0.0):7.2f} {'  ' * depth}{node.get('name')} "
                     f"rows={node.get('intermediate_rows')} {detail}")
    for child in node.get("children", []):
        lines.extend(operator_lines(child, depth + 1, floor))
    return lines


def main() -> None:
    """Profile once and print one operator tree per decision type."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("root", type=Path, help="a records folder made by bench/pipelines.py")
    parser.add_argument("--models", type=Path, help="a folder of <model>.sql files replacing those models")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        for path in profile(args.root, args.models, Path(out)):
            report = json.loads(path.read_text(encoding="utf-8"))
            query = report["query"]
            print(f"{path.stem}: {query['total_time']:.2f} s wall, {query['cpu_time']:.2f} CPU-s "
                  f"(operators of {MIN_SECONDS} CPU-s and more)")
            for node in report["operator"]:
                print("\n".join(operator_lines(node)))


if __name__ == "__main__":
    main()
