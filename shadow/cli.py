"""The `semif-shadow` command: one entry point, a subcommand per part of the project."""

from __future__ import annotations

import logging

import click

from pipelines.cli import pipelines
from scorer.cli import model, score
from scorer.demo import demo
from scorer.server.main import serve
from shadow.records.cli import records
from shadow.sidecar_cli import sidecar


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Log at DEBUG level.")
@click.version_option(package_name="semif-shadow")
def main(verbose: bool) -> None:
    """semif-shadow: trial an LLM decision model beside a live service, without letting it act.

    \b
    Examples:
      semif-shadow demo
      semif-shadow score --request decision.json
      semif-shadow model info
    """
    logging.basicConfig(level=logging.DEBUG if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")


main.add_command(score)
main.add_command(model)
main.add_command(demo)
main.add_command(serve)
main.add_command(sidecar)
main.add_command(pipelines)
main.add_command(records)
