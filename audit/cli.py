"""The ``semif-shadow audit`` command group: draw a week's audit sample, serve the workbench."""

from __future__ import annotations

import click


@click.group()
def audit() -> None:
    """Audits: who was right, production or the candidates, on a sample of decisions.

    \b
    Examples:
      semif-shadow audit --help
    """
