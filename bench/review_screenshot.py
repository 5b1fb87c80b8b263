"""The screenshot in docs/review.md: the first screen of a weekly review, rendered by headless Chromium.

With ``--html REVIEW``, captures that review (the demo's: ``semif-shadow demo`` writes
``demo-out/review.html``). Without it, generates records with two candidates and an identity change
(``semif-shadow pipelines generate --challenger --identity-change-week 1``; week 4, 2026-W48, drifted),
runs the pipelines over the five weeks and renders the review of 2026-W48 (``semif-shadow review``).
Captures the top ``--height`` pixels at ``--width`` (default 1400 x 900: what a meeting sees first) as a
PNG, the way the report tests load it (``tests/dashboards/browser.py``: Debian's ``chromium``). Prints
the file's size.

    python -P bench/review_screenshot.py --html demo-out/review.html --out docs/review.png
    python -P bench/review_screenshot.py --out docs/review.png

(``-P``: ``bench/pipelines.py`` would shadow the ``pipelines`` package.)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.dashboards.browser import Page, load

CLI = str(Path(sys.executable).parent / "semif-shadow")
WEEK = "2026-W48"
AS_OF = "2027-01-31T00:00:00Z"
"""Pinned, so that every outcome generated is known and reruns agree."""
READY = "document.querySelectorAll('[data-chart] svg').length"


def cli(work: str, *args: str) -> None:
    """Run ``semif-shadow`` with ``args`` in ``work`` (the report names its marts folder); stop on failure."""
    subprocess.run([CLI, *args], check=True, cwd=work, stdout=subprocess.DEVNULL)  # noqa: S603  (our own CLI)


def main() -> None:
    """Generate, run, render, capture."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("review.png"))
    parser.add_argument("--html", type=Path, default=None, help="capture this review, not a generated one")
    parser.add_argument("--decisions", type=int, default=200_000)
    parser.add_argument("--width", type=int, default=1400, help="the browser window's width")
    parser.add_argument("--height", type=int, default=900, help="pixels from the top of the page")
    args = parser.parse_args()
    if args.html is not None:
        shot = load(args.html, READY, width=args.width, height=args.height)
        _save(shot, args)
        return
    with tempfile.TemporaryDirectory() as work:
        cli(work, "pipelines", "generate", "--root", "records", "--decisions", str(args.decisions),
            "--challenger", "--identity-change-week", "1")
        cli(work, "pipelines", "run", "--root", "records", "--since", "2026-W44", "--until", WEEK,
            "--out", "marts", "--as-of", AS_OF)
        cli(work, "review", "--marts", "marts", "--week", WEEK, "--out", "review.html")
        shot = load(Path(work, "review.html"), READY, width=args.width, height=args.height)
    _save(shot, args)


def _save(shot: Page, args: argparse.Namespace) -> None:
    """Write the PNG (stop if the page logged errors) and say what it holds."""
    if shot.errors:
        sys.exit(f"the page logged errors: {shot.errors}")
    args.out.write_bytes(shot.screenshot)
    print(f"{args.out}: {len(shot.screenshot):,} bytes, {shot.result} charts rendered, "
          f"top {args.height} px at {args.width} px")


if __name__ == "__main__":
    main()
