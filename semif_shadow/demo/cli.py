"""The ``semif-shadow demo`` command."""

from __future__ import annotations

import time
from pathlib import Path

import click


@click.command("demo")
@click.option("--tickets", type=click.IntRange(min=4), default=300, show_default=True,
              help="Tickets to replay, spread evenly over the weeks.")
@click.option("--weeks", type=click.IntRange(2, 8), default=3, show_default=True,
              help="Simulated ISO weeks (the last shifts the ticket mix).")
@click.option("--seed", type=int, default=7, show_default=True, help="Same seed, same tickets.")
@click.option("--workload", type=click.Choice(["synthetic", "clinc150"]), default="synthetic",
              show_default=True,
              help="Synthetic support tickets, or the CLINC150 queries under --data.")
@click.option("--data", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="--workload clinc150: the folder holding data_full.json and domains.json.")
@click.option("--s3", is_flag=True, help="Records on S3, served by moto on loopback (pip install '.[demo]').")
@click.option("--out", type=click.Path(path_type=Path, file_okay=False), default=Path("demo-out"),
              show_default=True, help="Everything the run writes: records, marts, logs, review.html.")
@click.option("--scorer-threads", type=click.IntRange(min=1), default=None,
              help="llama.cpp threads of the scorer [default: one core fewer than the machine has]. "
                   "On an idle machine all cores are faster; on a busy one, fewer.")
def demo(tickets: int, weeks: int, seed: int, workload: str, data: Path | None, s3: bool,  # noqa: PLR0913, PLR0917  (click passes one argument per option)
         out: Path, scorer_threads: int | None) -> None:
    """Run a shadow trial end to end on loopback and open the weekly review.

    Starts the scorer (embedded model), a production router and the sidecar in proxy mode with two
    candidates (pmi and none normalization), replays tickets over simulated weeks, lets late outcomes
    arrive, runs the pipelines and renders the review of the last week. Ctrl-C stops everything.

    \b
    Examples:
      semif-shadow demo
      semif-shadow demo --tickets 60 --out /tmp/demo
      semif-shadow demo --scorer-threads 2     # an idle 2-core machine: every core for the model
      semif-shadow demo --workload clinc150 --data oos-eval/data   # git clone github.com/clinc/oos-eval
    """
    from semif_shadow.demo import summary, trial  # noqa: PLC0415  (keep --help fast)
    from semif_shadow.demo.processes import DemoError, interrupt_on_sigterm  # noqa: PLC0415

    interrupt_on_sigterm()
    started = time.perf_counter()
    config = trial.DemoConfig(out=out.resolve(), tickets=tickets, weeks=weeks, seed=seed, workload=workload,
                              data=data, s3=s3, scorer_threads=scorer_threads)
    try:
        result = trial.run(config)
    except DemoError as exc:
        raise click.ClickException(str(exc)) from exc
    except KeyboardInterrupt:
        click.echo("\ninterrupted: every service stopped", err=True)
        raise SystemExit(130) from None
    rows = summary.lines(result.marts, result.weeks[-1], result.summary.read_text(encoding="utf-8"),
                         result.p95_ms)
    click.echo(f"\nWeek {result.weeks[-1]}, decision type ticket_routing "
               "(docs/quickstart.md says what each column means):\n")
    click.echo(summary.table(rows))
    click.echo(summary.policy_line(result.policy))
    click.echo(f"\nRecords: {result.records_root}   marts: {result.marts}")
    click.echo(f"Report:  {result.report}  (open it in a browser: xdg-open {result.report})")
    click.echo(f"Done in {time.perf_counter() - started:.0f} s.")
