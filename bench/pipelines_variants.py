"""Variants of one pipelines model, interleaved in one process: CPU seconds per build, and equal tables?

Builds every model before MODEL once (as `bench/pipelines_models.py` does, on data that `bench/pipelines.py`
generated), then rebuilds MODEL once per variant per round, alternating the order each round (A B, B A, ...),
and prints each build's CPU seconds (user + system of the process, every DuckDB thread) and the median per
variant with its ratio to the first. A variant is a folder that may hold:

- ``<MODEL>.sql``: the model's SQL in place of the package's;
- ``<staging model>.sql`` (e.g. ``stg_outcomes.sql``): that view replaced for this variant's builds;
- ``settings.sql``: statements run before each of this variant's builds. They stay in force: give the
  other variants a ``settings.sql`` that sets the connection's value back (e.g. ``set memory_limit = '2GB'``).

An empty folder is the package's model. After each build the table's row count and per-column sums of
``hash(column)`` are compared with the first variant's first build ("same" / "DIFFERS"): an exact check
for a model without floating-point sums (``int_decisions``); float sums may differ in the last bits
between any two parallel runs.

    .venv/bin/python -P bench/pipelines_variants.py /tmp/semif-bench-pipelines/records-1000000-zstd \\
        int_decisions /tmp/main /tmp/variant --rounds 4
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.pipelines import AS_OF, SINCE, UNTIL


def cpu_seconds() -> float:
    """User + system CPU of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def settings_statements(variant: Path) -> list[str]:
    """The ``set`` statements of the variant's ``settings.sql`` (none without one)."""
    path = variant / "settings.sql"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    return [statement for statement in text.split(";") if statement.strip()]


def report(seconds: dict[Path, list[float]]) -> None:
    """Median CPU seconds per variant and the ratio to the first."""
    base = statistics.median(next(iter(seconds.values())))
    print(f"{'variant':<40} {'median CPU-s':>12} {'ratio':>6}  runs")
    for variant, runs in seconds.items():
        median = statistics.median(runs)
        listed = ", ".join(f"{r:.2f}" for r in runs)
        print(f"{variant!s:<40} {median:>12.2f} {median / base:>6.3f}  {listed}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


def main() -> None:
    """Build the prerequisites once, then every variant of the model per round; print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("root", type=Path, help="a records folder made by bench/pipelines.py")
    parser.add_argument("model", help="the model to rebuild, e.g. int_decisions")
    parser.add_argument("variants", type=Path, nargs="+",
                        help="variant folders (an empty one: the package's)")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()

    from pipelines import runner  # noqa: PLC0415
    from pipelines.prices import load_prices  # noqa: PLC0415
    from pipelines.settings import PipelineSettings  # noqa: PLC0415
    from pipelines.source import register_window  # noqa: PLC0415
    from pipelines.sqlmodels import load_models, quote_ident  # noqa: PLC0415
    from pipelines.storage import open_root  # noqa: PLC0415
    from pipelines.weeks import window  # noqa: PLC0415

    settings = PipelineSettings()
    span = window(SINCE, UNTIL, settings.reference_weeks, AS_OF, dt.timedelta(days=3))
    con = runner.connect(settings)
    con.execute("set enable_progress_bar = false")
    runner.bind_config(con, settings, span, load_prices(settings.prices_file))
    files = register_window(con, open_root(str(args.root)), span.read_start, span.read_end, span.as_of)
    models = load_models()
    index = next(i for i, m in enumerate(models) if m.name == args.model)
    runner.build(con, models[:index], None, files)
    staging = [m for m in models if m.layer == "staging"]
    table = quote_ident(args.model)

    seconds: dict[Path, list[float]] = {v: [] for v in args.variants}
    reference: object = None
    for round_ in range(args.rounds):
        for variant in args.variants if round_ % 2 == 0 else args.variants[::-1]:
            for view in staging:
                path = variant / f"{view.name}.sql"
                sql = path.read_text(encoding="utf-8").strip() if path.exists() else view.sql
                con.execute(f"create or replace view {view.name} as {sql}")
            statements = settings_statements(variant)
            path = variant / f"{args.model}.sql"
            model = replace(models[index], sql=path.read_text(encoding="utf-8").strip()) if path.exists() \
                else models[index]
            con.execute(f"drop table if exists {table}")
            for statement in statements:
                con.execute(statement)
            began_cpu, began_wall = cpu_seconds(), time.perf_counter()
            runner.build(con, [model], None, files)
            cpu, wall = cpu_seconds() - began_cpu, time.perf_counter() - began_wall
            seconds[variant].append(cpu)
            query = f"select count(*), sum(hash(columns(*))::hugeint) from {table}"  # noqa: S608  (quoted)
            check = con.sql(query).fetchall()[0]
            reference = check if reference is None else reference
            print(f"round {round_} {variant}: {cpu:.2f} CPU-s, {wall:.1f} s wall, "
                  f"{'same' if check == reference else 'DIFFERS'}", flush=True)
    report(seconds)


if __name__ == "__main__":
    main()
