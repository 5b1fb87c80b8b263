"""``semif-shadow weekly``: each step once, skipped when its output exists, resumable after a kill.

The records are generated (five weeks, 2026-W44..W48, production wrong on 10%, each week's audit sample
answered); the clock is pinned to Thursday 2026-12-03 06:30 UTC, when 2026-W48 has just matured: the run
reviews 2026-W47 and draws 2026-W48's sample. Every run is a real ``python -m semif_shadow`` process.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
import signal
import subprocess
import sys
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest

from semif_shadow.weekly import STEPS, weeks_for

if TYPE_CHECKING:
    from pathlib import Path

AS_OF = "2026-12-03T06:30:00Z"
ARGS = ["--root", "rec", "--marts", "marts", "--out", "reviews", "--as-of", AS_OF]


def weekly(folder: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """One ``semif-shadow weekly`` run in ``folder``."""
    return subprocess.run([sys.executable, "-m", "semif_shadow", "weekly", *ARGS, *extra],  # noqa: S603
                          cwd=folder, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``rec``: generated records of 2026-W44..W48 with answered audit samples."""
    folder = tmp_path_factory.mktemp("weekly-records")
    subprocess.run([sys.executable, "-m", "semif_shadow", "pipelines", "generate", "--root", "rec",
                    "--decisions", "3000", "--challenger", "--production-error-rate", "0.1", "--audit"],
                   cwd=folder, check=True, capture_output=True, timeout=300)
    return folder


def copy_of(records: Path, into: Path) -> Path:
    """A fresh folder holding a copy of the generated records."""
    shutil.copytree(records / "rec", into / "rec")
    return into


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder``: its size and modification time, by relative path."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def rounded(value: object) -> object:
    """A float to 9 significant digits: DuckDB's parallel sums may differ in the last bits run to run."""
    return float(f"{value:.9g}") if isinstance(value, float) else value


def outputs(folder: Path) -> dict[str, object]:
    """What a run leaves: every file's path; the reviews' and markers' text; each mart's rows.

    Floats are compared to 9 significant digits (in the HTML's charts too), the scratch DuckDB file by name.
    """
    found: dict[str, object] = {}
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        name = str(path.relative_to(folder))
        if path.suffix == ".parquet":
            found[name] = [{k: rounded(v) for k, v in row.items()} for row in pq.read_table(path).to_pylist()]
        elif name.startswith("reviews/"):
            text = path.read_text(encoding="utf-8")
            found[name] = re.sub(r"\d+\.\d{10,}", lambda m: f"{float(m[0]):.9g}", text)
        else:
            found[name] = None
    return found


def test_weeks_review_the_week_before_the_latest_mature_one() -> None:
    """At 2026-12-03 06:30 (lag 3 days) 2026-W48 is the latest mature week: it is sampled, W47 reviewed."""
    instant = dt.datetime(2026, 12, 3, 6, 30, tzinfo=dt.UTC)
    assert weeks_for(instant, 3, None) == ("2026-W47", "2026-W48")
    assert weeks_for(instant - dt.timedelta(hours=7), 3, None) == ("2026-W46", "2026-W47")
    assert weeks_for(instant, 3, "2026-W48") == ("2026-W48", None)  # W49 is not mature: no sample yet
    with pytest.raises(ValueError, match="2026-W49 is not mature"):
        weeks_for(instant, 3, "2026-W49")


def test_dry_run_prints_the_plan_and_writes_nothing(records: Path, tmp_path: Path) -> None:
    """``--dry-run`` names every step in order with what it would do, and leaves every folder as it was."""
    folder = copy_of(records, tmp_path)
    before = snapshot(folder)
    result = weekly(folder, "--dry-run")
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("[")]
    assert [line.split("]")[1].split(":")[0].strip() for line in lines] == list(STEPS)
    assert all(": would " in line for line in lines), lines
    assert "2026-W44..2026-W47" in result.stdout
    assert snapshot(folder) == before


def test_a_second_run_does_no_work(records: Path, tmp_path: Path) -> None:
    """Run twice on the same week: the second run skips every step, says so, and touches no file."""
    folder = copy_of(records, tmp_path)
    first = weekly(folder)
    assert first.returncode == 0, first.stderr
    assert "[4/5] review: 2026-W47:" in first.stdout
    assert (folder / "reviews" / "2026-W47.html").is_file()
    assert "[2026-W47](2026-W47.html)" in (folder / "reviews" / "index.md").read_text(encoding="utf-8")
    before = snapshot(folder)
    second = weekly(folder)
    assert second.returncode == 0, second.stderr
    assert second.stdout.count("done already") == len(STEPS), second.stdout
    assert "nothing to do, every step's output exists" in second.stdout
    assert snapshot(folder) == before


def test_killed_in_the_middle_and_rerun_finishes_with_the_same_files(records: Path, tmp_path: Path) -> None:
    """SIGKILL while the pipelines run; the rerun skips what finished and leaves what a whole run leaves."""
    whole = copy_of(records, tmp_path / "whole")
    assert weekly(whole).returncode == 0
    cut = copy_of(records, tmp_path / "cut")
    proc = subprocess.Popen([sys.executable, "-m", "semif_shadow", "weekly", *ARGS],  # noqa: S603
                            cwd=cut, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if line.startswith("[3/5] pipelines:"):
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL, seen
    assert not (cut / "reviews" / "2026-W47.html").exists()
    rerun = weekly(cut)
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.stdout.count("done already") == 2, rerun.stdout  # compact and sample
    assert outputs(cut) == outputs(whole)


def test_a_failed_step_is_named_and_the_exit_is_1(records: Path, tmp_path: Path) -> None:
    """A week without records: the sample step fails, the run stops there, exit 1 names it."""
    folder = copy_of(records, tmp_path)
    result = weekly(folder, "--week", "2026-W40")
    assert result.returncode == 1
    assert "weekly 2026-W40: step sample failed" in result.stderr
    assert "[3/5]" not in result.stdout
