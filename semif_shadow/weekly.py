"""``semif-shadow weekly``: the one command a schedule runs, each step skipped when its output exists.

Two weeks are in play. The **sample week** is the latest week whose outcomes are mature
(``PIPELINES_MATURITY_LAG_DAYS`` after it ends): its audit sample is drawn now, from final labels, so auditors
answer it during the week that follows. The **review week** is the week before it (or ``--week``): its
sample was drawn a week ago and has been answered, so the audited gate, which fails closed on a sample
stratum without audits, can pass.

Steps, in order (``STEPS``): ``compact`` (the records root's small files) -> ``sample`` (the sample week's
audit sample, ``semif-shadow audit sample``'s command) -> ``pipelines`` (the review week and the three before
it, so audits and outcomes that arrived after an earlier review count now; ``--catalog`` and every policy of
``--policies``) -> ``review`` (the review command's path: the policies replayed on the review week; the HTML
and Markdown written to ``--out``) -> ``index`` (``--out``'s index of every review there). Each step that
finishes writes a marker, ``<out>/.weekly/<review week>/<step>.done``, after its outputs; a step with a
marker is skipped, so a second run does no work and a run killed in the middle finishes on the next with
the same files as one that was never interrupted. Every write is whole (a temporary file renamed, or one
S3 object).
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from collections.abc import Callable

    from pipelines.storage import Root

STEPS = ("compact", "sample", "pipelines", "review", "index")
MARKERS = ".weekly"
RERUN_WEEKS = 3
"""Weeks before the review week that the pipelines recompute (late outcomes, late audits)."""
REVIEW_FILE = re.compile(r"^(\d{4}-W\d{2})\.html$")


class StepFailed(Exception):
    """A step that did not finish: its name and why."""

    def __init__(self, step: str, reason: str) -> None:
        super().__init__(f"{step}: {reason}")
        self.step = step


@dataclass(frozen=True)
class Plan:
    """What one run does: the weeks, the inputs and where every output goes."""

    review_week: str
    sample_week: str | None
    """None: the week after the review week is not mature yet (a later run draws its sample)."""
    root: str
    marts: str
    out: str
    catalog: Path | None = None
    policies: tuple[Path, ...] = ()
    config: Path | None = None
    as_of: str | None = None
    s3_endpoint: str | None = None
    s3_region: str = "us-east-1"
    since: str = field(init=False)

    def __post_init__(self) -> None:
        """The first week the pipelines recompute."""
        monday = monday_of(self.review_week) - dt.timedelta(weeks=RERUN_WEEKS)
        object.__setattr__(self, "since", label(monday))

    def describe(self, step: str) -> str:
        """What ``step`` does, in one line."""
        return {
            "compact": f"merge the small files of {self.root}",
            "sample": (f"draw {self.sample_week}'s audit sample under {self.root}" if self.sample_week
                       else f"draw no sample: the week after {self.review_week} is not mature yet"),
            "pipelines": f"compute the marts of {self.since}..{self.review_week} into {self.marts}"
                         + (f" with {len(self.policies)} policies" if self.policies else ""),
            "review": f"write the review of {self.review_week} to {self.out}/{self.review_week}.html and .md",
            "index": f"write the index of the reviews in {self.out} (index.html, index.md)",
        }[step]


def monday_of(week: str) -> dt.date:
    """The Monday of an ISO week (the pipelines' one parser)."""
    from pipelines.weeks import parse_week  # noqa: PLC0415  (keep --help fast)

    return parse_week(week, "week")


def label(monday: dt.date) -> str:
    """``YYYY-Www`` of a Monday (the pipelines' one formatter)."""
    from pipelines.weeks import week_label  # noqa: PLC0415  (keep --help fast)

    return week_label(monday)


def latest_mature(as_of: dt.datetime, lag_days: float) -> str:
    """The latest week whose outcomes are mature at ``as_of``: it ended at least ``lag_days`` before."""
    instant = as_of - dt.timedelta(days=lag_days) - dt.timedelta(weeks=1)
    return label(instant.date() - dt.timedelta(days=instant.weekday()))


def weeks_for(as_of: dt.datetime, lag_days: float, week: str | None) -> tuple[str, str | None]:
    """``(review week, sample week)``: by default the week before the latest mature one, and that one.

    A ``week`` not mature at ``as_of`` is refused (``ValueError``): its review would be provisional, and
    the markers would keep it from being redone once it matures.
    """
    mature = latest_mature(as_of, lag_days)
    if week is not None and monday_of(week) > monday_of(mature):
        raise ValueError(f"--week {week} is not mature at {as_of.isoformat()} (the latest mature week is "
                         f"{mature}): review it early with pipelines run and review, not weekly")
    review = week or label(monday_of(mature) - dt.timedelta(weeks=1))
    following = label(monday_of(review) + dt.timedelta(weeks=1))
    return review, following if monday_of(following) <= monday_of(mature) else None


# -- outputs ---------------------------------------------------------------------------------------------


def out_root(plan: Plan, *, create: bool = True) -> Root:
    """The ``--out`` folder (made unless ``create`` is false) or ``s3://`` prefix."""
    from pipelines.storage import open_root  # noqa: PLC0415

    root = open_root(plan.out, plan.s3_endpoint, plan.s3_region)
    if root.is_local and create:
        Path(root.base).mkdir(parents=True, exist_ok=True)
    return root


def exists(root: Root, key: str) -> bool:
    """Whether ``key`` is a file under ``root``."""
    import pyarrow.fs as pafs  # noqa: PLC0415

    return bool(root.fs.get_file_info(root.join(key)).type == pafs.FileType.File)


def put(root: Root, key: str, text: str) -> None:
    """Write ``text`` to ``key`` whole: a local temporary file renamed, or one S3 object."""
    target = root.join(key)
    if not root.is_local:
        with root.fs.open_output_stream(target) as stream:
            stream.write(text.encode())
        return
    path = Path(target)
    path.parent.mkdir(parents=True, exist_ok=True)
    hidden = path.with_name(f".{path.name}.tmp")
    hidden.write_text(text, encoding="utf-8")
    hidden.replace(path)


def marker(plan: Plan, step: str) -> str:
    """The key of ``step``'s marker under ``--out``."""
    return f"{MARKERS}/{plan.review_week}/{step}.done"


# -- the steps -------------------------------------------------------------------------------------------


def compact(plan: Plan, _ctx: click.Context) -> str:
    """Compact the records root (``records compact``'s defaults: files 10 minutes old, 5 minutes' grace)."""
    from contracts.settings import build_settings  # noqa: PLC0415
    from shadow.records.compact import CompactPolicy, compact_root  # noqa: PLC0415
    from shadow.records.layout import filesystem  # noqa: PLC0415
    from shadow.records.s3 import S3Uploader  # noqa: PLC0415
    from shadow.records.settings import RecordSettings  # noqa: PLC0415

    settings = build_settings(RecordSettings, {"root": ("--root", plan.root)})
    fs, base = filesystem(settings)
    uploader = S3Uploader(settings) if settings.is_s3 else None
    done = compact_root(fs, base, CompactPolicy(min_age_s=600.0, grace_s=300.0), uploader=uploader)
    merged = sum(len(result.merged) for _, result in done)
    return f"{len(done)} partitions, {merged} compact files written"


def sample(plan: Plan, ctx: click.Context) -> str:
    """Draw the sample week's audit sample with ``audit sample``'s command and defaults."""
    if plan.sample_week is None:
        return "nothing to draw yet"
    from audit.cli import sample as sample_command  # noqa: PLC0415

    ctx.invoke(sample_command, root=plan.root, week=plan.sample_week, decision_type=None,
               disagreements=200, agreement_rate=0.02, seed=0, overlap=0.1)
    return f"{plan.sample_week}'s sample drawn"


def pipelines(plan: Plan, ctx: click.Context) -> str:
    """``pipelines run`` over the review week and the three before it, with the catalog and policies."""
    from pipelines.cli import run_command  # noqa: PLC0415

    ctx.invoke(run_command, root=plan.root, week=None, since=plan.since, until=plan.review_week,
               out=plan.marts, as_of=plan.as_of, prices=(), catalog=plan.catalog, policies=plan.policies,
               s3_endpoint=plan.s3_endpoint, engine="duckdb", spark_master=None, approx_quantiles=False)
    return f"marts of {plan.since}..{plan.review_week}"


def review(plan: Plan, _ctx: click.Context) -> str:
    """The review command's path: load the marts, replay the policies, decide; write the HTML and Markdown."""
    from dashboards.config import load_config  # noqa: PLC0415
    from dashboards.errors import DashboardsError  # noqa: PLC0415
    from dashboards.marts import load_marts  # noqa: PLC0415
    from dashboards.policies import replay_policies  # noqa: PLC0415
    from dashboards.report import review as build  # noqa: PLC0415
    from dashboards.report import to_html, to_markdown  # noqa: PLC0415

    week = plan.review_week
    try:
        marts = load_marts(plan.marts, week, plan.s3_endpoint, plan.s3_region)
        replayed = replay_policies(plan.policies, plan.root, week, as_of=plan.as_of,
                                   s3_endpoint=plan.s3_endpoint) if plan.policies else []
        result = build(marts, load_config(plan.config), replayed)
    except DashboardsError as exc:
        raise click.ClickException(str(exc)) from exc
    root = out_root(plan)
    put(root, f"{week}.html", to_html(result))
    put(root, f"{week}.md", to_markdown(result))
    decisions = sorted({v.decision.upper() for s in result.sections for v in s.verdicts.values()})
    return f"{week}: {', '.join(decisions) or 'no verdict'} -> {plan.out}/{week}.html"


def index(plan: Plan, _ctx: click.Context) -> str:
    """``index.md`` and ``index.html`` under ``--out``: every review there, newest first, with verdicts."""
    root = out_root(plan)
    from pyarrow.fs import FileSelector  # noqa: PLC0415

    names = [info.base_name for info in root.fs.get_file_info(FileSelector(root.base))]
    weeks = sorted((m[1] for m in map(REVIEW_FILE.match, names) if m), reverse=True)
    rows = [(week, verdict_line(root, week)) for week in weeks]
    markdown = "# Weekly reviews\n\n" + "".join(
        f"- [{week}]({week}.html) ([summary]({week}.md)): {line}\n" for week, line in rows)
    items = "".join(f'<li><a href="{week}.html">{week}</a> (<a href="{week}.md">summary</a>): '
                    f"{html.escape(line)}</li>" for week, line in rows)
    put(root, "index.md", markdown)
    put(root, "index.html", f"<!doctype html><meta charset=utf-8><title>Weekly reviews</title>"
                            f"<h1>Weekly reviews</h1><ul>{items}</ul>")
    return f"{len(weeks)} reviews listed"


def verdict_line(root: Root, week: str) -> str:
    """The verdicts a review's Markdown summary states (``go 1, wait 2``), read from its Details lines."""
    key = root.join(f"{week}.md")
    with root.fs.open_input_stream(key) as stream:
        text = stream.read().decode()
    found = re.findall(r"^- \*\*[^*]+\*\* · .*?: \*\*([A-Z]+)\*\*", text, flags=re.MULTILINE)
    counts = {v: found.count(v) for v in sorted(set(found))}
    return ", ".join(f"{v.lower()} {n}" for v, n in counts.items()) or "no verdict"


RUNNERS: dict[str, Callable[[Plan, click.Context], str]] = {
    "compact": compact, "sample": sample, "pipelines": pipelines, "review": review, "index": index}


def execute(plan: Plan, ctx: click.Context, *, dry_run: bool = False) -> int:
    """Run (or with ``dry_run`` list) each step in order, one progress line each; the steps run."""
    root = out_root(plan, create=not dry_run)
    ran = 0
    for number, step in enumerate(STEPS, start=1):
        head = f"[{number}/{len(STEPS)}] {step}"
        if exists(root, marker(plan, step)):
            click.echo(f"{head}: done already ({plan.describe(step)}): skipped")
            continue
        if dry_run:
            click.echo(f"{head}: would {plan.describe(step)}")
            continue
        click.echo(f"{head}: {plan.describe(step)} ...")
        try:
            said = RUNNERS[step](plan, ctx)
        except (click.ClickException, OSError) as exc:
            reason = exc.format_message() if isinstance(exc, click.ClickException) else str(exc)
            raise StepFailed(step, reason) from exc
        except Exception as exc:  # a library's own error: named with its step, not a traceback
            raise StepFailed(step, f"{type(exc).__name__}: {exc}") from exc
        put(root, marker(plan, step), json.dumps({"step": step, "said": said}) + "\n")
        click.echo(f"{head}: {said}")
        ran += 1
    return ran


@click.command("weekly")
@click.option("--root", required=True, help="Records root: a folder or s3://bucket/prefix.")
@click.option("--marts", required=True, help="The pipelines' marts: a folder or s3://bucket/prefix.")
@click.option("--out", required=True, help="Where the reviews and their index go: a folder or s3://bucket/prefix.")
@click.option("--week", default=None,
              help="The ISO week to review (default: the week before the latest mature one).")
@click.option("--catalog", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None,
              help="Sidecar catalog: its high_consequence options feed the severe errors.")
@click.option("--policies", type=click.Path(path_type=Path, file_okay=False, exists=True), default=None,
              help="A folder of semif.policy/v1 files (*.json): the pipelines accumulate evidence at "
                   "each and the review replays each on the review week.")
@click.option("--config", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None,
              help="The review's rules and budgets (YAML; docs/review.md).")
@click.option("--as-of", default=None,
              help="Pin the instant (ISO, with a zone) that maturity and outcomes are read at.")
@click.option("--s3-endpoint", default=None, envvar="PIPELINES_S3_ENDPOINT", help="S3 endpoint override.")
@click.option("--dry-run", is_flag=True, help="Print the plan: each step, and whether its output exists.")
@click.pass_context
def weekly(ctx: click.Context, root: str, marts: str, out: str, week: str | None,  # noqa: PLR0913, PLR0917
           catalog: Path | None, policies: Path | None, config: Path | None, as_of: str | None,
           s3_endpoint: str | None, dry_run: bool) -> None:
    """The weekly loop in one command: compact, audit sample, pipelines, review, index.

    Each step is skipped when its output exists: run it again and it does no work; kill it and rerun and
    it finishes where it stopped. Exit 1 names the step that failed.

    \b
    Examples:
      semif-shadow weekly --root records --marts marts --out reviews --catalog catalog.yaml \\
          --policies policies
      semif-shadow weekly --root records --marts marts --out reviews --week 2026-W47 --dry-run
    """
    from contracts.settings import build_settings  # noqa: PLC0415  (keep --help fast)
    from pipelines.errors import PipelinesError  # noqa: PLC0415
    from pipelines.settings import PipelineSettings  # noqa: PLC0415

    settings = build_settings(PipelineSettings, {"s3_endpoint": ("--s3-endpoint", s3_endpoint)})
    try:
        instant = dt.datetime.now(dt.UTC) if as_of is None else dt.datetime.fromisoformat(as_of)
        review_week, sample_week = weeks_for(instant, settings.maturity_lag_days, week)
    except (ValueError, PipelinesError) as exc:
        raise click.UsageError(str(exc)) from exc
    plan = Plan(review_week, sample_week, root, marts, out.rstrip("/"), catalog,
                tuple(sorted(policies.glob("*.json"))) if policies else (), config, as_of,
                settings.s3_endpoint, settings.s3_region)
    click.echo(f"weekly: review {review_week}, audit sample {sample_week or '(none yet)'}"
               + (" (dry run: nothing is written)" if dry_run else ""))
    try:
        ran = execute(plan, ctx, dry_run=dry_run)
    except StepFailed as exc:
        click.echo(f"weekly {review_week}: step {exc.step} failed: {exc}", err=True)
        ctx.exit(1)
    if not dry_run:
        click.echo(f"weekly {review_week}: " + (f"{ran} steps run" if ran else
                   "nothing to do, every step's output exists") + f"; reviews in {out}")
