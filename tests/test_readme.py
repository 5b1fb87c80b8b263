"""The README's command lines run as printed, in order, in one open shell, from a fresh folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.doc_shell import Shell, checkout, scored_rows

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = ("make demo", "make test")  # the set-up and the suite themselves


def readme_lines() -> list[str]:
    """Each command line of the README's ``sh`` blocks, backslash continuations joined."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    lines = [line.strip() for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    return [line for line in lines if line and not line.startswith("#") and not line.startswith(SKIPPED)]


@pytest.mark.slow
def test_readme_command_lines_run_as_printed(tmp_path: Path) -> None:
    """Every README command line (but ``make demo`` / ``make test``) exits 0 from a fresh folder.

    The folder holds only ``.venv`` (this interpreter's) and the example catalogs, as a checkout after
    ``make`` would (`tests.doc_shell.checkout`). The lines run in order in one open shell: the scorer and
    the sidecar started in the background answer, a decision sent to the sidecar is scored, both are
    stopped as the README says (no job is left running), and ``records stats`` then shows the scored row.
    """
    lines = readme_lines()
    assert any("sidecar run" in line for line in lines)
    assert any("records stats" in line for line in lines)
    folder = tmp_path / "checkout"
    shell = Shell(folder, checkout(folder))
    try:
        for line in lines:
            output = shell.run(line)
            if "records stats" in line:
                assert scored_rows(output) >= 1, output
    finally:
        shell.stop()
