"""`semif-shadow pipelines`: generate records, run the weekly jobs, print their SQL."""

from __future__ import annotations

import contextlib
import datetime as dt
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from collections.abc import Callable

    from pipelines import runner
    from pipelines.settings import PipelineSettings

DEFAULT_OUT = Path("pipelines-out")


@click.group("pipelines")
def pipelines() -> None:
    """DuckDB jobs over the shadow records: agreement, calibration, drift, thresholds, latency, cost.

    \b
    Examples:
      semif-shadow pipelines generate --root records --decisions 100000
      semif-shadow pipelines run --root records --week 2026-W48
      semif-shadow pipelines sql --model calibration
      semif-shadow pipelines policy choose --root records --week 2026-W47 --type ticket_routing --out p.json
    """


@pipelines.command("generate")
@click.option("--root", required=True, help="Folder or s3://bucket/prefix to write records files under.")
@click.option("--decisions", type=click.IntRange(min=1), required=True, help="Offered decisions in total.")
@click.option(
    "--weeks", type=click.IntRange(1, 104), default=5, show_default=True, help="Weeks to spread them over."
)
@click.option("--first-week", default="2026-W44", show_default=True, help="ISO week of the first decision.")
@click.option(
    "--drift-week",
    type=int,
    default=4,
    show_default=True,
    help="0-based week with injected drift (overconfidence and a mix shift); -1 for none.",
)
@click.option("--seed", type=int, default=7, show_default=True, help="Same seed, same files.")
@click.option("--challenger", is_flag=True, help="A second candidate, `challenger`, on the same decisions.")
@click.option("--identity-change-week", type=int, default=-1, show_default=True,
              help="0-based week whose Thursday the default candidate's KV type changes; -1 for none.")
@click.option("--production-error-rate", type=click.FloatRange(0.0, 1.0), default=0.0, show_default=True,
              help="Share of decisions production gets wrong: its outcome is then not the truth.")
@click.option("--good-candidate", is_flag=True,
              help="The default candidate as one sharp identity on the GPU fleet: one that can go.")
@click.option("--audit", "audited", is_flag=True,
              help="Also draw each week's audit sample and answer it with the truth (a simulated auditor).")
@click.option("--auditor-error-rate", type=click.FloatRange(0.0, 1.0), default=0.0, show_default=True,
              help="With --audit: share of the auditor's answers that are wrong.")
@click.option("--s3-endpoint", default=None, help="S3 endpoint override (moto, MinIO).")
def generate_command(  # noqa: PLR0913, PLR0917  (click passes one argument per option)
    root: str,
    decisions: int,
    weeks: int,
    first_week: str,
    drift_week: int,
    seed: int,
    challenger: bool,
    identity_change_week: int,
    production_error_rate: float,
    good_candidate: bool,
    audited: bool,
    auditor_error_rate: float,
    s3_endpoint: str | None,
) -> None:
    """Write realistic records proposals and outcomes with known properties (Hive-partitioned).

    \b
    Example:
      semif-shadow pipelines generate --root records --decisions 1000000 --weeks 5
      semif-shadow pipelines generate --root ab --decisions 100000 --challenger --identity-change-week 2
      semif-shadow pipelines generate --root audited --decisions 100000 --challenger \\
          --production-error-rate 0.1 --audit
      semif-shadow pipelines generate --root good --decisions 40000 --drift-week -1 --good-candidate
    """
    from pipelines import synth  # noqa: PLC0415  (keep --help fast)
    from pipelines.errors import PipelinesError  # noqa: PLC0415
    from pipelines.generate import Plan, generate  # noqa: PLC0415
    from pipelines.storage import open_root  # noqa: PLC0415
    from pipelines.weeks import parse_week  # noqa: PLC0415

    change = None if identity_change_week < 0 else synth.IdentityChange(identity_change_week)
    try:
        plan = Plan(
            decisions=decisions,
            weeks=weeks,
            first_monday=parse_week(first_week, "first-week"),
            drift_week=None if drift_week < 0 else drift_week,
            seed=seed,
            knobs=synth.Knobs(
                challenger=synth.CHALLENGER if challenger else None,
                identity_change=change,
                production_error_rate=production_error_rate,
                models=synth.GOOD_MODELS if good_candidate else synth.DEFAULT_MODELS,
                fleets=synth.GPU_FLEETS if good_candidate else synth.DEFAULT_FLEETS,
            ),
        )
        started = time.perf_counter()
        if audited:
            from pipelines.generate_audits import generate_audited  # noqa: PLC0415

            knobs = synth.AuditKnobs(auditor_error_rate)
            counts = generate_audited(open_root(root, s3_endpoint), plan, knobs)
        else:
            counts = generate(open_root(root, s3_endpoint), plan)
    except PipelinesError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(
        f"wrote {counts['proposals']:,} proposals and {counts['outcomes']:,} outcomes "
        f"in {counts['files']:,} files under {root} ({time.perf_counter() - started:.1f} s)"
        + (f"; {counts['audits']:,} audits of the weekly samples" if audited else "")
    )


@pipelines.command("run")
@click.option("--root", required=True, help="Records root: a folder or s3://bucket/prefix.")
@click.option("--week", default=None, help="One ISO week, e.g. 2026-W48 (same as --since W --until W).")
@click.option("--since", default=None, help="First ISO week of a range.")
@click.option("--until", default=None, help="Last ISO week of a range (default: --since).")
@click.option(
    "--out",
    default=str(DEFAULT_OUT),
    show_default=True,
    help="Output root: <out>/<mart>/week=<W>/part-0.parquet and <out>/pipelines.duckdb; or s3://b/prefix "
    "(only the Parquet files, computed in a scratch folder first).",
)
@click.option(
    "--as-of", default=None, help="Use outcomes known at this ISO time (default: now). Pin it to rerun."
)
@click.option(
    "--price", "prices", multiple=True, metavar="TYPE=USD", help="Override an hourly instance price (repeat)."
)
@click.option(
    "--catalog",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Sidecar catalog: its options marked high_consequence feed severe_errors (or PIPELINES_CATALOG).",
)
@click.option(
    "--policy", "policies", multiple=True, type=click.Path(path_type=Path, dir_okay=False, exists=True),
    help="A semif.policy/v1 file the evidence mart accumulates evidence at (repeat; or PIPELINES_POLICIES).",
)
@click.option("--s3-endpoint", default=None, help="S3 endpoint override (moto, MinIO).")
@click.option(
    "--engine", type=click.Choice(["duckdb", "spark"]), default="duckdb", show_default=True,
    help="duckdb: one process; spark: the same models on Apache Spark (docs/pipelines-spark.md).",
)
@click.option(
    "--spark-master", default=None,
    help="Spark master when no session is active (default local[*]; spark-submit sets its own).",
)
@click.option(
    "--approx-quantiles", is_flag=True,
    help="Spark only: latency percentiles by percentile_approx (rank error <= 1/10,000) instead of exact.",
)
def run_command(  # noqa: PLR0913, PLR0917  (click passes one argument per option)
    root: str,
    week: str | None,
    since: str | None,
    until: str | None,
    out: str,
    as_of: str | None,
    prices: tuple[str, ...],
    catalog: Path | None,
    policies: tuple[Path, ...],
    s3_endpoint: str | None,
    engine: str,
    spark_master: str | None,
    approx_quantiles: bool,
) -> None:
    """Compute every mart for the target week(s) and write them (idempotent: a week is replaced whole).

    Other settings come from PIPELINES_* variables (docs/pipelines.md), e.g. PIPELINES_PRECISION_TARGET.

    \b
    Examples:
      semif-shadow pipelines run --root records --week 2026-W48
      semif-shadow pipelines run --root records --week 2026-W48 --catalog catalog.yaml
      semif-shadow pipelines run --root records --week 2026-W48 --policy ticket_routing.json
      semif-shadow pipelines run --root s3://shadow/records --since 2026-W40 --until 2026-W48 \\
          --s3-endpoint http://127.0.0.1:5000 --as-of 2026-12-05T00:00:00Z
    """
    from contracts.settings import build_settings  # noqa: PLC0415
    from pipelines.errors import PipelinesError  # noqa: PLC0415  (keep --help fast)
    from pipelines.settings import PipelineSettings  # noqa: PLC0415

    flags = {"s3_endpoint": ("--s3-endpoint", s3_endpoint), "catalog": ("--catalog", catalog),
             "policies": ("--policy", list(policies) or None)}
    settings = build_settings(PipelineSettings, flags)
    if engine != "spark" and (spark_master is not None or approx_quantiles):
        raise click.UsageError("--spark-master and --approx-quantiles apply only with --engine spark")
    try:
        engine_choice = Engine(engine, spark_master, approx_quantiles)
        _run(settings, root, _weeks(week, since, until), out, as_of, prices, engine_choice)
    except PipelinesError as exc:
        raise click.ClickException(str(exc)) from exc


def _weeks(week: str | None, since: str | None, until: str | None) -> tuple[str, str]:
    if week is not None and (since is not None or until is not None):
        raise click.UsageError("give --week, or --since (and --until), not both")
    first = week or since
    if first is None:
        raise click.UsageError("give --week W or --since W [--until W]")
    if week is not None:
        from pipelines.weeks import parse_week  # noqa: PLC0415  (keep --help fast)

        parse_week(week, "week")  # a bad --week is reported as --week, not --since
    return first, until or first


def _run(  # noqa: PLR0913, PLR0917  (the run command's options, checked and passed on)
    settings: PipelineSettings,
    root: str,
    weeks: tuple[str, str],
    out: str,
    as_of: str | None,
    price_specs: tuple[str, ...],
    engine: Engine | None = None,
) -> None:
    from pipelines import runner  # noqa: PLC0415
    from pipelines.errors import BadArgument  # noqa: PLC0415
    from pipelines.ledger import fetch_prior  # noqa: PLC0415
    from pipelines.prices import load_prices, parse_overrides  # noqa: PLC0415
    from pipelines.sqlmodels import ORDER  # noqa: PLC0415
    from pipelines.storage import open_root, publish  # noqa: PLC0415
    from pipelines.weeks import week_label, window  # noqa: PLC0415

    try:
        instant = runner.default_as_of() if as_of is None else dt.datetime.fromisoformat(as_of)
    except ValueError as exc:
        raise BadArgument(f"{as_of!r} is not an ISO date-time", "as-of") from exc
    span = window(
        weeks[0], weeks[1], settings.reference_weeks, instant, dt.timedelta(days=settings.maturity_lag_days)
    )
    table = load_prices(settings.prices_file).with_overrides(parse_overrides(price_specs))
    started = time.perf_counter()
    target = open_root(out, settings.s3_endpoint, settings.s3_region)
    with contextlib.ExitStack() as stack:
        folder = Path(target.base) if target.is_local else Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="pipelines-")))
        if not target.is_local:  # the evidence ledger continues from the last week written there
            fetch_prior(target, folder, span.first)
        with click.progressbar(length=len(ORDER) + 1, label="pipelines", file=sys.stderr) as bar:
            records = open_root(root, settings.s3_endpoint, settings.s3_region)
            job = runner.Job(settings, records, span, table, folder)
            if engine is not None and engine.name == "spark":
                result = _run_spark(job, engine, lambda _name: bar.update(1))
            else:
                result = runner.run(job, on_step=lambda _name: bar.update(1))
        if not target.is_local:
            copied = publish(folder, target, [week_label(m) for m in span.targets()])
            click.echo(f"copied {copied} Parquet files to {out}")
    for monday in span.targets():
        state = "final" if span.is_mature(monday) else "NOT mature: rerun when late outcomes have arrived"
        click.echo(f"{week_label(monday)}: {state}")
    click.echo(
        f"{sum(result.rows.values()):,} rows in {len(result.rows)} marts under {out} "
        f"({result.files['proposals']} + {result.files['outcomes']} files read, "
        f"{time.perf_counter() - started:.1f} s)"
    )


@dataclass(frozen=True)
class Engine:
    """``--engine`` and its Spark options."""

    name: str
    spark_master: str | None = None
    approx_quantiles: bool = False


def _run_spark(job: runner.Job, engine: Engine, step: Callable[[str], None]) -> runner.RunResult:
    from pyspark.sql import SparkSession  # noqa: PLC0415  (only with --engine spark)

    from pipelines import spark_runner  # noqa: PLC0415
    from pipelines.spark_sql import SparkOptions  # noqa: PLC0415

    active = SparkSession.getActiveSession() is not None
    spark = spark_runner.session(spark_runner.master_for(engine.spark_master, active=active))
    result, _ = spark_runner.run(job, step, spark, SparkOptions(approx_quantiles=engine.approx_quantiles))
    return result


@pipelines.command("sql")
@click.option("--model", "model_name", default=None, help="Print only this model.")
def sql_command(model_name: str | None) -> None:
    """Print the SQL of each model in dependency order, to run the same logic elsewhere.

    Staging models read `raw_proposals` and `raw_outcomes` (records); every model reads its settings from
    the one-row `run_params` table and the `cfg_*` tables (the staging models read the window's instants
    from variables, set from `run_params` by the statements printed first); `cp_lower(x, n, a)` is the
    Beta(a; x, n-x+1) quantile (scipy.special.betaincinv). The `evidence` model has no ledger columns:
    `pipelines run` adds and fills them when it writes the marts (pipelines/ledger.py), from the weeks
    already written.

    \b
    Examples:
      semif-shadow pipelines sql
      semif-shadow pipelines sql --model thresholds
    """
    from pipelines.sqlmodels import load_models, window_variable_statements  # noqa: PLC0415

    models = [m for m in load_models() if model_name in (None, m.name)]
    if not models:
        raise click.ClickException(f"no model named {model_name!r}")
    if any(m.layer == "staging" for m in models):
        click.echo("-- the window's instants, for the staging models (after filling run_params)")
        click.echo("".join(f"{statement};\n" for statement in window_variable_statements()))
    for model in models:
        click.echo(f"-- {model.layer}/{model.name}.sql ({model.kind})")
        click.echo(model.create_statement() + ";\n")


def _add_policy() -> None:
    from pipelines.policy_cli import policy  # noqa: PLC0415  (click only: keeps --help fast)

    pipelines.add_command(policy)


_add_policy()
