"""The screenshot in docs/audit.md: the audit workbench showing a decision, rendered by headless Chromium.

Writes a small week the way the workbench tests do (``tests/audit/week.py``: proposals with stored,
redacted states through the sidecar's record store, production outcomes, an audit sample with two
double audits), starts ``semif-shadow audit serve`` on a free port, signs in, answers three decisions by
keyboard and captures the fourth at 1100 px wide as a PNG. Prints the file's size.

    python -P bench/audit_screenshot.py --out docs/audit.png

(``-P``: ``bench/pipelines.py`` would shadow the ``pipelines`` package.)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.audit import week
from tests.audit.chromium import tab
from tests.audit.serving import running


def main() -> None:
    """Write the week, serve it, answer three, capture the fourth."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("audit.png"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        tmp = Path(work)
        root = tmp / "records"
        items = week.decisions(24)
        asyncio.run(week.write_records(root, tmp / "sidecar-spool", items))
        week.write_sample(root, [d.decision_id for d in items], double={"d0002", "d0011"})
        catalog = week.catalog(tmp / "catalog.yaml")
        with running(root, catalog, tmp / "audit-spool") as base, tab() as page:
            page.sign_in(base, week.TOKEN, "auditor-7")
            for key in ("2", "1", "n"):
                page.press(key)
            shot = page.screenshot()
            errors = page.errors
    if errors:
        sys.exit(f"the page logged errors: {errors}")
    args.out.write_bytes(shot)
    print(f"{args.out}: {len(shot):,} bytes")


if __name__ == "__main__":
    main()
