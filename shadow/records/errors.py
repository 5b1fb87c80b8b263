# Copyright 2026 the semif-shadow authors. Licensed under the Apache License 2.0.
"""Errors raised by the record store.

The tree::

    RecordsError                    base of everything the store raises on purpose
    +-- StoreClosed                 a write after ``close()`` or before start
    +-- InvalidRow                  a row the schema cannot hold (unknown column, wrong type)
    +-- UploadFailed                S3 refused or could not be reached (retried; surfaces only in the CLI)
    +-- CompactionError             a partition cannot be compacted safely

    SinkFull                        the local disk bound is reached (drop with disk_full)

``SinkFull`` lives in ``sink.py`` (the sidecar's interface, which imports nothing of the store) and is
re-exported here; it is not a ``RecordsError``. Third-party
exceptions (botocore, pyarrow, OSError) are translated where they are caught: upload errors become
``UploadFailed``; the CLI renders any ``RecordsError`` as one line and a non-zero exit.
"""

from __future__ import annotations

from shadow.records.sink import SinkFull


class RecordsError(Exception):
    """Base of every error the record store raises on purpose."""


class StoreClosed(RecordsError):
    """The store is not running (not started yet, or closed)."""


class InvalidRow(RecordsError):
    """A row the records schema cannot hold."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class UploadFailed(RecordsError):
    """S3 refused an upload or could not be reached."""


class CompactionError(RecordsError):
    """A partition cannot be compacted safely."""


__all__ = ["CompactionError", "InvalidRow", "RecordsError", "SinkFull", "StoreClosed", "UploadFailed"]
