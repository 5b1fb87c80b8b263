"""ISO weeks, parsed in one place (``pipelines.weeks``) for every package."""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from pathlib import Path

import pytest

from pipelines.errors import BadArgument
from pipelines.weeks import parse_week, week_after, week_label


def test_a_week_is_its_monday_and_back() -> None:
    """``parse_week`` gives the Monday, ``week_label`` the label again, across a 53-week year."""
    assert parse_week("2026-W53") == dt.date(2026, 12, 28)
    assert week_label(parse_week("2027-W01")) == "2027-W01"


def test_week_after_crosses_years() -> None:
    """``week_after`` counts whole weeks, forward and back, through week 53."""
    assert week_after("2026-W52", 1) == "2026-W53"
    assert week_after("2026-W53", 1) == "2027-W01"
    assert week_after("2027-W01", -1) == "2026-W53"
    assert week_after("2026-W48", 0) == "2026-W48"


@pytest.mark.parametrize("text", ["2026-48", "2026-W54", "last week", "2025-W53"])
def test_what_is_not_a_week_is_refused_naming_the_field(text: str) -> None:
    """A malformed week, or a week its year lacks, is ``BadArgument`` naming the field."""
    with pytest.raises(BadArgument, match=r"^--week: "):
        parse_week(text, "--week")


def test_no_other_module_reads_or_writes_a_week_by_hand() -> None:
    """Outside ``pipelines/weeks.py`` no installed module turns an ISO week into a date or back itself."""
    root = Path(__file__).resolve().parents[2]
    by_hand = re.compile(r"fromisocalendar|isocalendar\(\)|-W\{")
    packages = [root / name for name in tomllib.loads((root / "pyproject.toml").read_text())["tool"]["mypy"]
                ["packages"]]
    found = [str(path.relative_to(root)) for package in packages for path in package.rglob("*.py")
             if path != root / "pipelines" / "weeks.py" and by_hand.search(path.read_text(encoding="utf-8"))]
    assert found == []
