"""`semif-shadow review`: the weekly rollout review from the pipelines' marts."""

from __future__ import annotations

import time
from pathlib import Path, PurePosixPath

import click


@click.command("review")
@click.option(
    "--marts", "marts_uri", required=True, help="The pipelines' output: a folder or s3://bucket/prefix."
)
@click.option("--week", required=True, help="ISO week to review, e.g. 2026-W48.")
@click.option(
    "--out",
    default="review.html",
    show_default=True,
    help="The HTML report (a file or s3://bucket/key.html); the Markdown summary goes beside it (.md).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Review rules and budgets (YAML); defaults in docs/review.md.",
)
@click.option(
    "--policy",
    "policy_paths",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A semif.policy/v1 file (`pipelines policy choose` on an earlier week), replayed on the review "
    "week for the go rule; repeatable (one per decision type and identity). Needs --records.",
)
@click.option(
    "--records", default=None, help="The records root the policies are replayed on (folder or s3://)."
)
@click.option("--as-of", default=None, help="Replay with outcomes known at this ISO time (default: now).")
@click.option("--s3-endpoint", default=None, envvar="PIPELINES_S3_ENDPOINT", help="S3 endpoint override.")
@click.option("--s3-region", default="us-east-1", show_default=True, envvar="PIPELINES_S3_REGION")
def review(  # noqa: PLR0913, PLR0917  (click passes one argument per option)
    marts_uri: str,
    week: str,
    out: str,
    config_path: Path | None,
    policy_paths: tuple[Path, ...],
    records: str | None,
    as_of: str | None,
    s3_endpoint: str | None,
    s3_region: str,
) -> None:
    """Render the weekly review: verdicts go / wait / reject per decision type and candidate, and charts.

    \b
    Example:
      semif-shadow review --marts pipelines-out --week 2026-W48 --out review.html
      semif-shadow review --marts pipelines-out --week 2026-W48 --policy ticket_routing.json --records records
    """
    from dashboards.config import load_config  # noqa: PLC0415  (keep --help fast)
    from dashboards.errors import DashboardsError  # noqa: PLC0415
    from dashboards.marts import load_marts  # noqa: PLC0415
    from dashboards.policies import replay_policies  # noqa: PLC0415
    from dashboards.report import review as build  # noqa: PLC0415
    from dashboards.report import to_html, to_markdown  # noqa: PLC0415
    from pipelines.errors import PipelinesError  # noqa: PLC0415
    from pipelines.weeks import parse_week  # noqa: PLC0415

    started = time.perf_counter()
    try:
        parse_week(week, "week")
    except PipelinesError as exc:
        raise click.UsageError(str(exc)) from exc
    if policy_paths and records is None:
        raise click.UsageError("--policy needs --records: the policy is replayed on the week's decisions")
    try:
        config, marts = load_config(config_path), load_marts(marts_uri, week, s3_endpoint, s3_region)
        replayed = (
            replay_policies(policy_paths, records, week, as_of=as_of, s3_endpoint=s3_endpoint)
            if policy_paths and records is not None
            else []
        )
        result = build(marts, config, replayed)
    except DashboardsError as exc:
        raise click.ClickException(str(exc)) from exc
    html, markdown = to_html(result), to_markdown(result)
    summary = _write(out, html, markdown, s3_endpoint, s3_region)
    click.echo(markdown)
    click.echo(
        f"wrote {out} ({len(html.encode()) / 1e6:.2f} MB) and {summary} "
        f"in {time.perf_counter() - started:.1f} s",
        err=True,
    )


def _write(out: str, html: str, markdown: str, s3_endpoint: str | None, s3_region: str) -> str:
    """Write the report and its summary to files or ``s3://`` objects (each whole); the summary's name."""
    remote = out.startswith("s3://")
    summary = "s3://" * remote + str(PurePosixPath(out.removeprefix("s3://")).with_suffix(".md"))
    if not remote:
        Path(out).write_text(html, encoding="utf-8")
        Path(summary).write_text(markdown, encoding="utf-8")
        return summary
    from pyarrow import ArrowException  # noqa: PLC0415

    from pipelines.storage import open_root  # noqa: PLC0415

    folder, _, name = out.rpartition("/")
    root = open_root(folder, s3_endpoint, s3_region)
    try:
        for key, text in ((name, html), (summary.rpartition("/")[2], markdown)):
            with root.fs.open_output_stream(root.join(key)) as stream:
                stream.write(text.encode())
    except (ArrowException, OSError) as exc:
        raise click.ClickException(f"--out: cannot write {out}: {exc}") from exc
    return summary
