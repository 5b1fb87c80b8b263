"""Scorer refusals: every one counted, the first of each candidate and cause logged, repeats rate-limited."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from shadow.backends.chat import AnswerModeRejected
from shadow.errors import ScorerRejected
from shadow.metrics import Metrics
from shadow.refusals import RefusalLog

if TYPE_CHECKING:
    import pytest


def refused(metrics: Metrics, candidate: str, cause: str) -> float:
    """The counter's value for one candidate and cause."""
    value = metrics.registry.get_sample_value(
        "shadow_scorer_refused_total", {"endpoint": "http://s", "candidate": candidate, "cause": cause})
    return value or 0.0


def test_each_candidate_and_cause_is_told_once_then_once_per_interval(
        caplog: pytest.LogCaptureFixture) -> None:
    """Two candidates, two causes: four first lines, then one per interval with the count since.

    100 repeats within the interval add no line; after it, one line per (candidate, cause) with the number
    refused since; the counter has every refusal.
    """
    caplog.set_level(logging.WARNING, logger="shadow.scorer")
    metrics = Metrics()
    refusals = RefusalLog(metrics, repeat_s=60.0)
    mode = AnswerModeRejected("rejected answer_mode 'json_schema' (HTTP 500: no); set the scorer's mode")
    http = ScorerRejected("HTTP 400: bad request")
    for second in range(101):
        for candidate in ("pmi", "none"):
            refusals.report(candidate, "http://s", mode, now=float(second) * 0.5)
            refusals.report(candidate, "http://s", http, now=float(second) * 0.5)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 4
    assert sum("set the scorer's mode" in line for line in lines) == 2
    caplog.clear()
    refusals.report("pmi", "http://s", mode, now=61.0)
    refusals.report("pmi", "http://s", mode, now=62.0)
    assert [r.getMessage() for r in caplog.records] == [
        "scorer still refusing candidate pmi (101 more since): " + str(mode)]
    assert refused(metrics, "pmi", "AnswerModeRejected") == 103
    assert refused(metrics, "none", "ScorerRejected") == 101
