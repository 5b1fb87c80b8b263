"""ISO weeks (``2026-W48``): the unit of every job. A week runs Monday 00:00 UTC to the next Monday."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from pipelines.errors import BadArgument

WEEK_RE = re.compile(r"^(\d{4})-W(\d{2})$")


def parse_week(text: str, field: str = "week") -> dt.date:
    """The Monday of ISO week ``YYYY-Www``; ``BadArgument`` naming ``field`` otherwise."""
    match = WEEK_RE.match(text.strip())
    if match is None:
        raise BadArgument(f"{text!r} is not an ISO week like 2026-W48", field)
    try:
        return dt.date.fromisocalendar(int(match[1]), int(match[2]), 1)
    except ValueError as exc:
        raise BadArgument(f"{text!r} is not a week of that year", field) from exc


def week_label(monday: dt.date) -> str:
    """``YYYY-Www`` for the week holding ``monday``."""
    year, week, _ = monday.isocalendar()
    return f"{year}-W{week:02d}"


def week_after(week: str, weeks: int) -> str:
    """The ISO week ``weeks`` after ``week`` (``YYYY-Www``)."""
    return week_label(parse_week(week) + dt.timedelta(weeks=weeks))


def as_utc(day: dt.date) -> dt.datetime:
    """Midnight UTC at the start of ``day``."""
    return dt.datetime.combine(day, dt.time(), dt.UTC)


@dataclass(frozen=True)
class Window:
    """Target weeks ``first..last`` (Mondays), read with ``reference_weeks`` more before them."""

    first: dt.date
    last: dt.date
    reference_weeks: int
    as_of: dt.datetime
    maturity_lag: dt.timedelta

    @property
    def read_start(self) -> dt.datetime:
        """Start of the earliest reference week."""
        return as_utc(self.first - dt.timedelta(weeks=self.reference_weeks))

    @property
    def read_end(self) -> dt.datetime:
        """End (exclusive) of the last target week."""
        return as_utc(self.last + dt.timedelta(weeks=1))

    def targets(self) -> list[dt.date]:
        """The Mondays of the target weeks."""
        count = (self.last - self.first).days // 7 + 1
        return [self.first + dt.timedelta(weeks=i) for i in range(count)]

    def is_mature(self, monday: dt.date) -> bool:
        """Whether the week ended at least ``maturity_lag`` before ``as_of`` (its outcomes are final)."""
        return as_utc(monday + dt.timedelta(weeks=1)) + self.maturity_lag <= self.as_of


def window(
    since: str, until: str, reference_weeks: int, as_of: dt.datetime, maturity_lag: dt.timedelta
) -> Window:
    """The window for ``--since/--until`` (or ``--week`` given as both); ``BadArgument`` if reversed."""
    first, last = parse_week(since, "since"), parse_week(until, "until")
    if last < first:
        raise BadArgument(f"{until} is before {since}", "until")
    if as_of.tzinfo is None:
        raise BadArgument("as_of needs a time zone", "as_of")
    return Window(first, last, reference_weeks, as_of, maturity_lag)
