"""The ``semif-shadow`` command and the bare ``serve`` that SageMaker runs.

Sub-commands live in their packages and are imported only when called, so ``--help`` is fast and
``semif-shadow serve`` never imports the sidecar (nor ``sidecar run`` llama.cpp, unless a catalog asks
for the in-process backend). Logging is set up here, once, as JSON lines; a bad setting is one line on
stderr and exit code 2, a catalog that does not validate one line (per field) and exit code 1.
"""

from __future__ import annotations

import importlib
import logging
import sys
from typing import Any

import click

from contracts.errors import ContractError, SettingsError
from semif_shadow import logs

COMMANDS = {
    "demo": ("semif_shadow.demo.cli", "demo", "A shadow trial end to end on loopback, then the review."),
    "score": ("scorer.cli", "score", "Score one decision in-process (SemIf request JSON or flags)."),
    "infra": ("semif_shadow.infra", "infra", "Fill CloudFormation parameters from the release record."),
    "model": ("scorer.cli", "model", "The scorer's model: identity, llama.cpp build."),
    "release-record": ("scorer.cli", "release_record", "The release record a deployed scorer must match."),
    "serve": ("scorer.server.main", "serve", "Run the SageMaker-compatible SemIf scorer server."),
    "sidecar": ("shadow.cli", "sidecar", "Run the shadow sidecar, or check a decision catalog."),
    "records": ("shadow.records.cli", "records", "Inspect and compact the shadow records."),
    "pipelines": ("pipelines.cli", "pipelines", "The weekly DuckDB jobs over the records."),
    "review": ("dashboards.cli", "review", "The weekly rollout review report from the marts."),
    "audit": ("audit.cli", "audit", "Audits: draw a week's sample, serve the page where people answer it."),
    "weekly": ("semif_shadow.weekly", "weekly", "The weekly loop: compact, audit sample, marts, review."),
}
"""name -> (module, attribute, one-line help): the command tree, without importing it."""

EXTRAS = {"demo": "all", "score": "scorer", "model": "scorer", "release-record": "scorer", "serve": "scorer",
          "sidecar": "sidecar", "records": "sidecar", "pipelines": "pipelines", "review": "review",
          "audit": "all", "weekly": "all"}
"""name -> the pyproject extra its third-party imports come from (``infra`` needs the base install only)."""
OWN_PACKAGES = frozenset(
    {"contracts", "scorer", "shadow", "pipelines", "dashboards", "audit", "semif_shadow"})
"""A missing module of these is a broken install or a bug, never a missing extra: it is not translated."""


def missing_extra(command: str, exc: ModuleNotFoundError) -> str | None:
    """One line naming the extra a third-party module comes from and the pip command; None for our own."""
    top = (exc.name or "").split(".")[0]
    if not top or top in OWN_PACKAGES:
        return None
    extra = EXTRAS.get(command, "all")
    return (f"semif-shadow {command}: needs the '{extra}' extra (no module named '{top}'); "
            f"install it with: pip install 'semif-shadow[{extra}]'")


def exit_for_missing_extra(ctx: click.Context, command: str, exc: ModuleNotFoundError) -> None:
    """Print the missing extra's one line and exit 2; return (to re-raise) for a module of our own."""
    line = missing_extra(command, exc)
    if line is not None:
        click.echo(line, err=True)
        ctx.exit(2)


class LazyGroup(click.Group):
    """A group whose sub-commands are imported on first use; contract errors become one line."""

    def list_commands(self, ctx: click.Context) -> list[str]:  # noqa: ARG002  (click's signature)
        """Every sub-command's name."""
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Import the sub-command's module and return the command."""
        if cmd_name not in COMMANDS:
            return None
        module, attr, _ = COMMANDS[cmd_name]
        try:
            command = getattr(importlib.import_module(module), attr)
        except ModuleNotFoundError as exc:
            exit_for_missing_extra(ctx, cmd_name, exc)
            raise
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:  # noqa: ARG002
        """List sub-commands from the table (no imports)."""
        with formatter.section("Commands"):
            formatter.write_dl([(name, COMMANDS[name][2]) for name in sorted(COMMANDS)])

    def invoke(self, ctx: click.Context) -> Any:
        """Run the sub-command; a bad setting is one line and exit 2, a bad catalog one line and exit 1."""
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as exc:
            exit_for_missing_extra(ctx, ctx.invoked_subcommand or "", exc)
            raise
        except SettingsError as exc:
            raise click.UsageError(str(exc)) from exc
        except ContractError as exc:
            raise click.ClickException(str(exc)) from exc


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-v", "--verbose", is_flag=True, help="Log at DEBUG level.")
@click.option("-q", "--quiet", is_flag=True, help="Log errors only.")
@click.version_option(package_name="semif-shadow")
def main(verbose: bool, quiet: bool) -> None:
    """semif-shadow: trial an LLM decision model beside a live service, without letting it act.

    Logs are JSON lines on stderr (warnings and errors; services also log their events).

    \b
    Examples:
      semif-shadow demo
      semif-shadow score --request decision.json
      semif-shadow sidecar run --catalog catalog.yaml
      semif-shadow pipelines run --root ./shadow-records --week 2026-W48
    """
    logs.configure(logging.DEBUG if verbose else logging.ERROR if quiet else logging.WARNING)


def serve_main() -> None:
    """The bare ``serve`` command (SageMaker runs ``serve``): settings come from SCORER_* variables."""
    try:
        from scorer.server.main import run  # noqa: PLC0415
        from scorer.settings import ScorerSettings  # noqa: PLC0415
    except ModuleNotFoundError as exc:
        line = missing_extra("serve", exc)
        if line is None:
            raise
        print(line, file=sys.stderr)  # noqa: T201  (before logging is set up)
        raise SystemExit(2) from exc

    logs.configure(logging.INFO)
    from contracts.settings import build_settings  # noqa: PLC0415

    try:
        run(build_settings(ScorerSettings))
    except ContractError as exc:  # a bad setting, or one the machine refuses (the invariant mode on a GPU)
        print(f"serve: {exc}", file=sys.stderr)  # noqa: T201  (before anything else can report)
        raise SystemExit(2) from exc
