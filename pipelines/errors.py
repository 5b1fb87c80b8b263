"""Errors raised by the pipelines.

The tree::

    PipelinesError              base of everything the pipelines raise on purpose
    +-- BadArgument             a week, date range, root or setting that cannot be used (names the field)
    +-- NoInput                 the root holds no records files for the requested window
    +-- SchemaMismatch          a Parquet file does not follow records
    +-- PriceTableError         the price table is missing, malformed or lacks an instance type
    +-- PolicyMismatch          a policy replayed on records scored under another model identity

Third-party errors (pyarrow, DuckDB, botocore) are translated at the boundary in ``storage.py`` and
``runner.py``; the CLI prints one line and exits non-zero.
"""

from __future__ import annotations


class PipelinesError(Exception):
    """Base of every error the pipelines raise on purpose."""


class BadArgument(PipelinesError):
    """An argument or setting that cannot be used; ``field`` names it."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class NoInput(PipelinesError):
    """No records files under the root for the requested window."""


class SchemaMismatch(PipelinesError):
    """A Parquet file under the root does not follow the records schema."""


class PriceTableError(PipelinesError):
    """The dated price table cannot be used."""


class PolicyMismatch(PipelinesError):
    """A policy replayed on records of another model identity than the one it is valid for."""
