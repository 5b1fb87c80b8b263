"""`semif-shadow pipelines policy`: choose a per-option threshold policy on one week, replay it on another."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    import duckdb

    from pipelines.settings import PipelineSettings

ROOT = click.option("--root", required=True, help="Records root: a folder or s3://bucket/prefix.")
AS_OF = click.option("--as-of", default=None, help="Use outcomes known at this ISO time (default: now).")
S3 = click.option("--s3-endpoint", default=None, help="S3 endpoint override (moto, MinIO).")


@click.group("policy")
def policy() -> None:
    """Per-option thresholds chosen on one week and judged on another (never the same data).

    \b
    Examples:
      semif-shadow pipelines policy choose --root records --week 2026-W47 --type ticket_routing --out p.json
      semif-shadow pipelines policy replay --root records --week 2026-W48 --policy p.json
    """


def week_connection(
    settings: PipelineSettings, root: str, week: str, as_of: str | None
) -> duckdb.DuckDBPyConnection:
    """Every mart computed in memory for one week (its reference weeks read too); the open connection."""
    from pipelines import runner  # noqa: PLC0415  (keep --help fast)
    from pipelines.errors import BadArgument  # noqa: PLC0415
    from pipelines.prices import load_prices  # noqa: PLC0415
    from pipelines.storage import open_root  # noqa: PLC0415
    from pipelines.weeks import window  # noqa: PLC0415

    try:
        instant = runner.default_as_of() if as_of is None else dt.datetime.fromisoformat(as_of)
    except ValueError as exc:
        raise BadArgument(f"{as_of!r} is not an ISO date-time", "as-of") from exc
    lag = dt.timedelta(days=settings.maturity_lag_days)
    span = window(week, week, settings.reference_weeks, instant, lag)
    con = runner.connect(settings)
    job = runner.Job(settings, open_root(root, settings.s3_endpoint, settings.s3_region), span,
                     load_prices(settings.prices_file))
    runner.run(job, con=con)
    return con


def settings_for(s3_endpoint: str | None) -> PipelineSettings:
    """``PIPELINES_*`` settings with the command's flags."""
    from contracts.settings import build_settings  # noqa: PLC0415
    from pipelines.settings import PipelineSettings  # noqa: PLC0415

    return build_settings(PipelineSettings, {"s3_endpoint": ("--s3-endpoint", s3_endpoint)})


@policy.command("choose")
@ROOT
@click.option("--week", required=True, help="ISO week to choose the thresholds on.")
@click.option("--type", "decision_type", required=True, help="Decision type.")
@click.option("--candidate", default="default", show_default=True, help="Candidate (scorer) name.")
@click.option("--identity", default=None, help="Model identity sha256 (a prefix) when it had several.")
@click.option("--abstain-action", default="review", show_default=True, help="What a decision below goes to.")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), required=True, help="Policy file.")
@AS_OF
@S3
def choose_command(  # noqa: PLR0913, PLR0917  (click passes one argument per option)
    root: str, week: str, decision_type: str, candidate: str, identity: str | None, abstain_action: str,
    out: Path, as_of: str | None, s3_endpoint: str | None,
) -> None:
    """Write the policy of one candidate identity: its per-option thresholds on WEEK, with the evidence.

    Target and error rate: PIPELINES_PRECISION_TARGET, PIPELINES_ALPHA (the `thresholds` mart's rule).

    \b
    Example:
      semif-shadow pipelines policy choose --root records --week 2026-W47 --type ticket_routing \\
          --candidate default --identity 09a714980318 --out policy.json
    """
    from pipelines.errors import PipelinesError  # noqa: PLC0415
    from pipelines.policy import choose  # noqa: PLC0415

    try:
        con = week_connection(settings_for(s3_endpoint), root, week, as_of)
        try:
            chosen = choose(con, decision_type, week=week, candidate=candidate, identity=identity,
                            abstain_action=abstain_action)
        finally:
            con.close()
        out.write_text(chosen.dumps())
    except (PipelinesError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    accepting = sum(o["grid_index"] is not None for o in chosen.options)
    click.echo(f"{out}: {chosen.model_key}, {accepting} of {len(chosen.options)} options with a threshold")


@policy.command("replay")
@ROOT
@click.option("--week", required=True, help="ISO week to replay on (not the one the policy was chosen on).")
@click.option("--policy", "policy_file", type=click.Path(path_type=Path, dir_okay=False), required=True,
              help="Policy file written by `policy choose`.")
@AS_OF
@S3
def replay_command(
    root: str, week: str, policy_file: Path, as_of: str | None, s3_endpoint: str | None
) -> None:
    """Print what the policy would have done on WEEK, as one JSON object.

    Coverage, precision and its 95% Clopper-Pearson interval, severe errors, decisions sent to the
    abstain action, cost per accepted decision.

    A policy whose model identity scored nothing of its candidate that week is refused.

    \b
    Example:
      semif-shadow pipelines policy replay --root records --week 2026-W48 --policy policy.json
    """
    from pipelines.errors import PipelinesError  # noqa: PLC0415
    from pipelines.policy import load_policy, replay  # noqa: PLC0415

    try:
        chosen = load_policy(policy_file)
        if chosen.chosen_on == week:
            click.echo(f"warning: {week} is the week the policy was chosen on (in-sample)", err=True)
        con = week_connection(settings_for(s3_endpoint), root, week, as_of)
        try:
            result = replay(con, chosen, week)
        finally:
            con.close()
    except PipelinesError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(json.dumps(result, indent=2, default=str))
