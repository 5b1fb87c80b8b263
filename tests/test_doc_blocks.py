"""The docs' runnable command blocks run as printed, so a quick start that goes stale fails the suite.

A block in ``docs/*.md`` fenced as ```` ```sh runnable ```` is run; any other block is only shown. Each
file's runnable blocks run in order, line by line (backslash continuations joined), in one open shell
(`tests.doc_shell.Shell`: exports, ``cd``, background jobs, ``kill %1`` and ``wait`` carry over) in a
fresh folder holding only ``.venv`` and the example catalogs (as a checkout after ``make``), with
``.venv/bin`` first on ``PATH``, as a reader with the environment activated would type them.

A quick start that starts the scorer and the sidecar must end with a scored row: the output of its
``records stats`` line reports at least one ``scored`` proposal. A line ending in a ``#=> TEXT`` comment
must print TEXT (the doc says what the reader will see; the test reads it from there). Background jobs
it leaves running fail it (it must say how to stop what it started). Services listen on loopback ports
the test picks and passes in their variables (``SCORER_PORT``, ``SHADOW_PORT``), so docs address them as
``localhost:${SHADOW_PORT:-8470}``: the default for a reader, a free port here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from shadow.sampling import is_sampled
from tests.doc_shell import Shell, checkout, scored_rows

ROOT = Path(__file__).resolve().parents[1]
RUNNABLE = re.compile(r"^```sh runnable[ \t]*\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)
QUICK_STARTS = ("README.md", "docs/sidecar.md", "docs/quickstart.md")
EXPECT = re.compile(r"#=> (.+?)\s*$")
"""A runnable line's ``#=> TEXT`` comment: what its output must hold."""
EXAMPLE_ID = re.compile(r'"decision_type": "ticket_routing", "decision_id": "([^"]+)"')


def runnable_lines(text: str) -> list[str]:
    """The command lines of a Markdown text's runnable blocks, in order; comments and blanks left out."""
    lines = []
    for block in RUNNABLE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                lines.append(stripped)
    return lines


def docs_with_runnable_blocks() -> list[Path]:
    """Every ``docs/*.md`` holding at least one runnable block."""
    return sorted(p for p in (ROOT / "docs").glob("*.md") if runnable_lines(p.read_text(encoding="utf-8")))


def test_runnable_blocks_are_found() -> None:
    """The marker is read: a runnable block's lines (continuations joined), not a plain block's."""
    text = ("```sh\nnot run\n```\n```sh runnable\n# a comment\nfirst \\\n  --flag\n\nsecond\n```\n"
            "```sh runnable\nthird\n```\n")
    assert runnable_lines(text) == ["first    --flag", "second", "third"]
    assert docs_with_runnable_blocks(), "no doc marks a runnable block"


@pytest.mark.slow
@pytest.mark.parametrize("doc", docs_with_runnable_blocks(), ids=lambda p: p.name)
def test_doc_blocks_run_as_printed(doc: Path, tmp_path: Path) -> None:
    """Every line of the doc's runnable blocks exits 0, in order, printing its ``#=>`` text.

    `records stats` shows a scored row.
    """
    folder = tmp_path / "checkout"
    shell = Shell(folder, checkout(folder))
    try:
        for line in runnable_lines(doc.read_text(encoding="utf-8")):
            output = shell.run(line)
            if "records stats" in line:
                assert scored_rows(output) >= 1, output
            expected = EXPECT.search(line)
            assert expected is None or expected[1] in output, f"{line!r} printed no {expected}: {output}"
    finally:
        shell.stop()


def test_operations_rehearsal_ends_with_go_then_wait_for_an_immature_week() -> None:
    """docs/operations.md's runnable lines say the weekly review goes, then an immature week's does not.

    What they print is checked when they run (`test_doc_blocks_run_as_printed[operations.md]`): the weekly
    run reviews 2026-W47 on generated records with audits and production wrong on 10% and says GO for
    every verdict; a second run does no work; 2026-W48, reviewed before it matures, says WAIT: not final.
    """
    lines = runnable_lines((ROOT / "docs" / "operations.md").read_text(encoding="utf-8"))
    said = [(line, found[1]) for line in lines if (found := EXPECT.search(line))]
    immature = "**WAIT** — default is not decided yet: outcomes of 2026-W48 not final yet"
    assert [text for _, text in said] == ["[4/5] review: 2026-W47: GO ->",
                                         "nothing to do, every step's output exists", immature]
    assert "--production-error-rate 0.1 --audit" in lines[0]
    assert all(word in said[0][0] for word in ("semif-shadow weekly", "--policies"))
    assert "semif-shadow review" in said[2][0]


def test_example_decision_ids_are_in_the_example_catalogs_samples() -> None:
    """Every ``ticket_routing`` decision id the quick starts show is sampled by both example catalogs.

    A reader who sends it gets ``"queued": 1`` from either (shadow/examples/catalog.yaml samples 25%).
    """
    texts = [(ROOT / name).read_text(encoding="utf-8") for name in QUICK_STARTS]
    ids = {found for text in texts for found in EXAMPLE_ID.findall(text)}
    assert ids, "no example decision id found"
    for catalog in ("catalog.yaml", "quickstart.yaml"):
        sampling = yaml.safe_load((ROOT / "shadow" / "examples" / catalog).read_text())[
            "decision_types"]["ticket_routing"].get("sampling", {})
        rate, salt = sampling.get("rate", 1.0), sampling.get("salt", "")
        assert all(is_sampled(i, rate, salt) for i in ids), (catalog, sorted(ids))
