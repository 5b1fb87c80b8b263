"""Plain helpers of the infra tests (data, runs, servers), imported where used.

`conftest.py` beside it keeps the fixtures.
"""

from __future__ import annotations

import contextlib
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


START_TIMEOUT_S = 30.0


DECISION = {"decision_id": "d1", "state": "charged twice", "question": "Which team?", "options": ["a", "b"]}


def wait_for(url: str, timeout_s: float = START_TIMEOUT_S) -> None:
    """Return once ``url`` answers HTTP at all (any status)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=1).close()  # noqa: S310  (http on loopback)
        except urllib.error.HTTPError:
            return
        except OSError:
            time.sleep(0.1)
        else:
            return
    raise RuntimeError(f"nothing answered at {url}")


@dataclass
class ScorerRun:
    """What a real `serve` process showed: its JSON log lines and its Prometheus text."""

    log_lines: list[dict[str, object]]
    metrics_text: str


def _request(url: str, data: bytes | None = None) -> None:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})  # noqa: S310
    with contextlib.suppress(urllib.error.HTTPError):  # a 503 is the point: answers count by status
        urllib.request.urlopen(request, timeout=5).close()  # noqa: S310  (http on loopback)
