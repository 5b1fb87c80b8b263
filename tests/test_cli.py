"""The one `semif-shadow` command: every subcommand documented with an example; `score` end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from semif_shadow.cli import main

CLI = str(Path(sys.executable).with_name("semif-shadow"))


def run_cli(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run the installed `semif-shadow` with ``args`` (text in, text out, 2 minutes at most)."""
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120, **kwargs)  # type: ignore[call-overload]  # noqa: S603, PLW1510


def _commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every (sub)command path, through the lazy group's own listing (as ``--help`` finds them)."""
    ctx = click.Context(group)
    out = [prefix]
    for name in sorted(group.list_commands(ctx)):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            out += _commands(command, (*prefix, name))
        else:
            out.append((*prefix, name))
    return out


@pytest.mark.parametrize("path", _commands(main), ids=lambda p: " ".join(p) or "semif-shadow")
def test_every_command_has_help_with_an_example(path: tuple[str, ...]) -> None:
    """`--help` works on every (sub)command and shows at least one example."""
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Example" in result.output
    assert "\\b" not in result.output  # click's paragraph marker must not leak into the text


def test_score_from_flags_prints_a_semif_response(model_path: Path) -> None:
    """`semif-shadow score --question --option --state` prints a SemIf response for those options."""
    result = run_cli(
        [
            "score",
            "--model",
            str(model_path),
            "--question",
            "Which team should handle this ticket?",
            "--option",
            "billing=Billing",
            "--option",
            "tech=Technical support",
            "--state",
            "I was charged twice this month",
            "--normalization",
            "pmi",
        ],
        check=True,
    )
    body = json.loads(result.stdout)
    assert [o["id"] for o in body["options"]] == ["billing", "tech"]
    assert abs(sum(o["probability"] for o in body["options"]) - 1) < 1e-6


def test_score_from_stdin_and_errors_name_the_field(model_path: Path) -> None:
    """`--request -` reads stdin; an invalid request exits 2 with the SemIf error (field named) on stderr."""
    good = {
        "decision_id": "s1",
        "state": "refund please",
        "question": "Team?",
        "options": ["billing", "tech"],
    }
    ok = run_cli(["score", "--model", str(model_path), "--request", "-"], input=json.dumps(good), check=True)
    assert json.loads(ok.stdout)["decision_id"] == "s1"
    bad = run_cli(
        ["score", "--model", str(model_path), "--request", "-"],
        input=json.dumps({**good, "options": ["a", "a"]}),
        check=False,
    )
    assert bad.returncode == 2
    assert json.loads(bad.stderr)["error"]["field"] == "options[1].id"


def test_a_bad_catalog_exits_1_and_a_bad_setting_exits_2(tmp_path: Path) -> None:
    """`sidecar run` with a catalog that does not validate: a line naming the field, exit 1; a bad flag: 2.

    The exit codes the docs state (docs/development.md, docs/sidecar.md), from the installed command.
    """
    catalog = tmp_path / "catalog.yaml"
    body = "version: 1\ndecision_types:\n  t:\n    question: ''\n    options: [{id: a, text: A}]\n"
    catalog.write_text(body, encoding="utf-8")
    bad_catalog = run_cli(["sidecar", "run", "--catalog", str(catalog)], check=False)
    assert bad_catalog.returncode == 1, bad_catalog.stderr
    assert "decision_types.t." in bad_catalog.stderr
    assert "Traceback" not in bad_catalog.stderr
    bad_port = run_cli(["sidecar", "run", "--catalog", str(catalog), "--port", "70000"], check=False)
    assert bad_port.returncode == 2, bad_port.stderr
    assert "--port 70000" in bad_port.stderr
