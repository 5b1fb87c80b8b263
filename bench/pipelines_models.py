"""Where the DuckDB pipelines job spends its CPU and memory: one in-process run, model by model.

Runs exactly what `bench/pipelines.py` times (`pipelines run --since 2026-W44 --until 2026-W48` on data
that `bench/pipelines.py` generated), but measures after each step: wall seconds, CPU seconds of the
process (user + system, every DuckDB thread), its RSS and peak RSS, and the memory DuckDB's buffer manager
holds. Imports are a step of their own. Rows are in build order; a model built in several passes (the decision
types grouped by `PIPELINES_PASS_MB`) is one row, its passes summed; the last line is the whole process.

    .venv/bin/python -P bench/pipelines_models.py /tmp/semif-bench-pipelines/records-10000000-zstd

An older tree is timed with `PYTHONPATH=<tree>` (run from that tree). To measure a variant of the SQL
without editing the package: `--models DIR` builds `DIR/<model>.sql` in
place of each model of that name, and `--after latency=int_decisions` builds `latency` right after
`int_decisions`.

`--profile MODEL` instead builds the models before MODEL for the largest decision type only (the job's
first pass; its `int_decisions` in a file where the job would keep it there), then MODEL once under DuckDB's
profiler, and prints its operators as `bench/profile_decisions.py` does (CPU seconds summed over threads, at
least `--floor`, 0.05 by default) and the bytes DuckDB spilled:

    .venv/bin/python -P bench/pipelines_models.py /tmp/semif-bench-pipelines/records-10000000-zstd \
        --profile paired
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import resource
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest import mock

# appended, not inserted: with PYTHONPATH=<another tree> (e.g. a `git worktree` of an older commit) that
# tree's packages are the ones timed
sys.path.append(str(Path(__file__).resolve().parents[1]))

from bench.pipelines import AS_OF, SINCE, UNTIL

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from pipelines.sqlmodels import Model


def cpu_seconds() -> float:
    """User + system CPU of this process so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def rss_mib() -> tuple[int, int]:
    """Current and peak resident memory of this process, MiB."""
    current = 0
    with Path("/proc/self/status").open(encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                current = int(line.split()[1]) // 1024
    return current, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def variant(models: list[Model], folder: Path | None, moves: list[str]) -> list[Model]:
    """The models, ``folder/<name>.sql`` in place of their SQL, each ``MODEL=OTHER`` moved after OTHER."""
    if folder is not None:
        models = [
            replace(m, sql=(folder / f"{m.name}.sql").read_text(encoding="utf-8").strip())
            if (folder / f"{m.name}.sql").exists() else m
            for m in models
        ]
    for move in moves:
        name, _, after = move.partition("=")
        moved = next(m for m in models if m.name == name)
        models.remove(moved)
        models.insert(next(i for i, m in enumerate(models) if m.name == after) + 1, moved)
    return models


def write_marts(con: Any, out: Path, span: Any, step: Callable[[str], None], settings: Any) -> None:
    """Write the marts as the timed tree's runner does (its signature has changed over time)."""
    from pipelines import runner  # noqa: PLC0415  (the timed tree's, imported by main first)

    if hasattr(runner, "write_job_marts"):
        write: Any = runner.write_job_marts
        if "alpha" in inspect.signature(write).parameters:  # trees with the evidence ledger
            write(con, out, span, step, settings.evidence_alpha)
        else:
            write(con, out, span, step)
    else:  # trees from before the Spark engine write from output.py directly
        from pipelines.output import write_marts as write_all  # noqa: PLC0415

        write_all(con, out, span)
        step("write")


@contextlib.contextmanager
def tree_store(con: Any, settings: Any) -> Iterator[Any]:
    """The tree's decision store (None in trees without one), its file removed when the block ends."""
    from pipelines import runner  # noqa: PLC0415

    store = runner.decision_store(settings) if hasattr(runner, "decision_store") else None
    try:
        yield store
    finally:
        if store is not None:
            store.close(con)


def build_all(con: Any, models: list[Model], files: Any, settings: Any, step: Any) -> None:
    """Every model, as the tree's runner builds them: in passes, a pass far larger than memory on disk."""
    from pipelines import runner  # noqa: PLC0415

    with tree_store(con, settings) as store:
        if not hasattr(runner, "build_passes"):  # trees that build every decision type at once
            runner.build(con, models, step, files)
            runner.check_segments(con)
            return
        passes = files.passes(settings.pass_mb * 2**20)
        # trees with a store keep a pass far larger than memory in a file
        where = "" if store is None else f", on disk: {[store.on_disk(files.subset(p)) for p in passes]}"
        print(f"passes: {passes}{where}")
        runner.build_passes(con, models, files, passes, step, **({} if store is None else {"store": store}))


def profile(con: Any, models: list[Model], files: Any, args: argparse.Namespace, settings: Any) -> None:
    """Build the models before ``args.profile`` over the largest type's files; then it, profiled.

    Where the tree keeps a pass far larger than memory in a file, that type's ``int_decisions`` is built
    there, as the job builds it, and the heading says so.
    """
    from bench.profile_decisions import operator_lines  # noqa: PLC0415  (imports the package)
    from pipelines import runner  # noqa: PLC0415
    from pipelines.sqlmodels import SPENT_AFTER  # noqa: PLC0415  (the runner's own dict)

    target, floor = args.profile, args.floor
    index = next(i for i, m in enumerate(models) if m.name == target)
    part = files.subset(files.types_largest_first()[:1])
    part.register(con)
    # the target's column drops would be profiled in its place
    spent = {k: v for k, v in SPENT_AFTER.items() if k != target}
    with (tree_store(con, settings) as store, tempfile.TemporaryDirectory() as folder,
          mock.patch.dict(SPENT_AFTER, spent, clear=True)):
        extra = () if store is None else (store,)  # older trees' build takes no store
        runner.build(con, models[:index], None, part, *extra)
        output = Path(folder) / "profile.json"
        con.execute("set enable_profiling = 'json'")
        con.execute("set profiling_output = $path", {"path": str(output)})
        started, began = time.perf_counter(), cpu_seconds()
        runner.build(con, [models[index]], None, part, *extra)
        wall, cpu = time.perf_counter() - started, cpu_seconds() - began
        con.execute("set enable_profiling = 'no_output'")
        tree = json.loads(output.read_text(encoding="utf-8"))
        on_disk = store is not None and store.path is not None
    spilled = tree.get("system", {}).get("total_bytes_spilled", 0) / 2**20
    print(f"{target} over {part.types_largest_first()[0]}: {wall:.2f} s wall, {cpu:.2f} CPU-s "
          f"(DuckDB: {tree.get('query', {}).get('cpu_time', 0.0):.2f}), {spilled:,.0f} MiB spilled"
          + (", int_decisions in a file" if on_disk else ""))
    for node in tree.get("operator", []):
        print("\n".join(operator_lines(node, floor=floor)))


Row = tuple[str, float, float, int, int, int]


def merged(rows: list[Row]) -> list[Row]:
    """One row per step, in first-build order.

    A model built in several passes sums its seconds and shows the memory after its last build.
    """
    out: dict[str, Row] = {}
    for name, wall, cpu, rss, peak, buffers in rows:
        before = out.get(name, (name, 0.0, 0.0, 0, 0, 0))
        out[name] = (name, before[1] + wall, before[2] + cpu, rss, peak, buffers)
    return list(out.values())


def arguments() -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The command line (the parser too, for its errors)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("root", type=Path, help="a records folder made by bench/pipelines.py")
    parser.add_argument("--models", type=Path, help="a folder of <model>.sql files replacing those models")
    parser.add_argument("--after", action="append", default=[], metavar="MODEL=OTHER",
                        help="build MODEL right after OTHER (repeatable)")
    parser.add_argument("--profile", metavar="MODEL",
                        help="profile MODEL alone, over the largest decision type (see above)")
    parser.add_argument("--floor", type=float, default=0.05, metavar="S",
                        help="with --profile: list the operators of at least S seconds (default 0.05)")
    return parser, parser.parse_args()


def main() -> None:
    """Run the job once and print one row per step."""
    parser, args = arguments()
    began_wall, began_cpu = time.perf_counter(), cpu_seconds()
    import datetime as dt  # noqa: PLC0415  (the imports are measured as a step)

    from pipelines import runner  # noqa: PLC0415
    from pipelines.prices import load_prices  # noqa: PLC0415
    from pipelines.settings import PipelineSettings  # noqa: PLC0415
    from pipelines.source import register_window  # noqa: PLC0415
    from pipelines.sqlmodels import load_models  # noqa: PLC0415
    from pipelines.storage import open_root  # noqa: PLC0415
    from pipelines.weeks import window  # noqa: PLC0415

    rows: list[Row] = []
    mark = [began_wall, began_cpu]
    con = None

    def step(name: str) -> None:
        buffers = 0
        if con is not None:
            query = "select sum(memory_usage_bytes) // 1048576 from duckdb_memory()"
            (buffers,) = con.sql(query).fetchall()[0]
        now_wall, now_cpu = time.perf_counter(), cpu_seconds()
        rows.append((name, now_wall - mark[0], now_cpu - mark[1], *rss_mib(), int(buffers or 0)))
        mark[:] = [time.perf_counter(), cpu_seconds()]

    step("(imports)")
    settings = PipelineSettings()
    span = window(SINCE, UNTIL, settings.reference_weeks, AS_OF, dt.timedelta(days=3))
    con = runner.connect(settings)
    runner.bind_config(con, settings, span, load_prices(settings.prices_file))
    files = register_window(con, open_root(str(args.root)), span.read_start, span.read_end, span.as_of)
    step("(connect, register)")
    models = variant(load_models(), args.models, args.after)
    if args.profile is not None:
        if args.profile not in {m.name for m in models}:
            parser.error(f"--profile: no model is named {args.profile!r}")
        profile(con, models, files, args, settings)
        return
    build_all(con, models, files, settings, lambda model: step(model.name))
    with tempfile.TemporaryDirectory() as out:
        write_marts(con, Path(out), span, step, settings)
    print(f"{'step':<26} {'wall s':>7} {'CPU s':>7} {'RSS MiB':>8} {'peak MiB':>9} {'DuckDB MiB':>11}")
    for name, wall, cpu, rss, peak, buffers in merged(rows):
        print(f"{name:<26} {wall:>7.2f} {cpu:>7.2f} {rss:>8} {peak:>9} {buffers:>11}")
    total_cpu = cpu_seconds() - began_cpu
    print(f"{'(process)':<26} {time.perf_counter() - began_wall:>7.2f} {total_cpu:>7.2f} {rss_mib()[0]:>8} "
          f"{rss_mib()[1]:>9}")


if __name__ == "__main__":
    main()
