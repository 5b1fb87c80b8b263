"""A subcommand whose extra is not installed says which extra and the pip command, in one line, exit 2.

The fresh-environment check (base install only, the real missing modules) is
tests/infra/test_image_env.py; here the translation itself, in this environment: a third-party module
missing becomes the line, one of this project's own is re-raised (a broken install, not an extra).
"""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from semif_shadow.cli import COMMANDS, EXTRAS, exit_for_missing_extra, missing_extra


def test_every_subcommand_names_an_extra_of_the_project() -> None:
    """Each subcommand but ``infra`` (base install only) maps to an extra pyproject.toml declares."""
    import tomllib  # noqa: PLC0415  (only this test reads it)
    from pathlib import Path  # noqa: PLC0415

    extras = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    assert set(COMMANDS) - set(EXTRAS) == {"infra"}
    assert set(EXTRAS.values()) <= set(extras)


@pytest.mark.parametrize(("command", "module", "extra"), [
    ("sidecar", "aiohttp", "sidecar"), ("records", "orjson", "sidecar"), ("pipelines", "duckdb", "pipelines"),
    ("review", "altair.vegalite", "review"), ("serve", "llama_cpp", "scorer"),
])
def test_a_missing_third_party_module_is_one_line_and_exit_2(command: str, module: str, extra: str) -> None:
    """The line names the command, the extra, the module and the pip command; the exit code is 2."""
    @click.command()
    def broken() -> None:
        raise ModuleNotFoundError(f"No module named '{module}'", name=module)

    @click.command()
    @click.pass_context
    def wrapper(ctx: click.Context) -> None:
        try:
            ctx.invoke(broken)
        except ModuleNotFoundError as exc:
            exit_for_missing_extra(ctx, command, exc)
            raise

    result = CliRunner().invoke(wrapper, [])
    top = module.split(".", maxsplit=1)[0]
    assert result.exit_code == 2
    assert result.output.strip() == (f"semif-shadow {command}: needs the '{extra}' extra (no module named "
                                     f"'{top}'); install it with: pip install 'semif-shadow[{extra}]'")


@pytest.mark.parametrize("module", ["shadow.nothing_here", "contracts", "semif_shadow.x"])
def test_a_missing_module_of_our_own_is_not_called_an_extra(module: str) -> None:
    """A module of this project missing is a bug or a broken install: no extra line, the error stands."""
    assert missing_extra("sidecar", ModuleNotFoundError(module, name=module)) is None
