"""A log budget per request: no request (or proxied exchange) can make the sidecar write unbounded logs.

`request_budget` opens a `Budget` in a context variable for the time one API request or one mirrored
exchange is handled (the API's middleware, ``shadow.intake.extract.mirror_messages``); tasks started
meanwhile share it. `BudgetFilter`, on every handler of the root logger, counts each record logged
while a budget is open, its message and traceback bytes, and drops the records past
``SHADOW_LOG_REQUEST_MAX_LINES`` or ``SHADOW_LOG_REQUEST_MAX_BYTES``. The first record over the budget
is replaced by one line saying so; every dropped one is counted (``shadow_log_lines_dropped_total``).
Records logged outside a request (the recorder's decision lines, start-up, shutdown) are not counted.
"""

from __future__ import annotations

import contextlib
import logging
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

_VERDICT = "shadow_log_budget_verdict"
"""The record attribute holding the filter's verdict, so a record on several handlers counts once."""


@dataclass(slots=True)
class Budget:
    """What one request may still log, and what it logged."""

    max_lines: int
    max_bytes: int
    lines: int = 0
    size: int = 0
    dropped: int = 0


_CURRENT: ContextVar[Budget | None] = ContextVar("shadow_log_budget", default=None)


@contextlib.contextmanager
def request_budget(max_lines: int, max_bytes: int) -> Iterator[Budget]:
    """Count what is logged in this context (and in tasks it starts) against a fresh budget."""
    budget = Budget(max_lines, max_bytes)
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


class BudgetFilter(logging.Filter):
    """Drops records past the current request's budget; ``on_drop`` is called once per record dropped."""

    def __init__(self, on_drop: Callable[[], None]) -> None:
        super().__init__()
        self.on_drop = on_drop

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether the record is written (decided once per record, whatever the number of handlers)."""
        verdict = getattr(record, _VERDICT, None)
        if verdict is None:
            verdict = self._judge(record)
            setattr(record, _VERDICT, verdict)
        return bool(verdict)

    def _judge(self, record: logging.LogRecord) -> bool:
        budget = _CURRENT.get()
        if budget is None:
            return True
        if budget.dropped:
            budget.dropped += 1
            self.on_drop()
            return False
        size = len(record.getMessage()) + len(record.exc_text or "")
        if record.exc_info:  # measured only: the scrub filter must still see (and scrub) the traceback
            size += len(logging.Formatter().formatException(record.exc_info))
        if budget.lines < budget.max_lines and budget.size + size <= budget.max_bytes:
            budget.lines += 1
            budget.size += size
            return True
        budget.dropped = 1
        self.on_drop()
        record.msg = (f"log budget of this request spent ({budget.lines} lines, {budget.size} bytes; "
                      f"at most {budget.max_lines} lines, {budget.max_bytes} bytes): further lines dropped")
        record.args = None
        record.exc_info = None
        record.exc_text = None
        record.__dict__.pop("fields", None)
        return True


def install_budget_filter(on_drop: Callable[[], None]) -> Callable[[], None]:
    """Put a `BudgetFilter` first on every handler of the root logger; return the function removing it."""
    budget_filter = BudgetFilter(on_drop)
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:
        handler.filters.insert(0, budget_filter)

    def remove() -> None:
        for handler in handlers:
            handler.removeFilter(budget_filter)

    return remove
