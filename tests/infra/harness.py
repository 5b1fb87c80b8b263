"""Plain helpers of the infra tests (data, runs, servers), imported where used.

`conftest.py` beside it keeps the fixtures.
"""

from __future__ import annotations

import contextlib
import re
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botocore.validate import ParamValidator

from tests.infra.cfn import coerce, operation

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


DOCKERFILES = {"sagemaker": ROOT / "infra/sagemaker/Dockerfile", "sidecar": ROOT / "infra/sidecar/Dockerfile"}


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", "\n".join(line for line in dockerfile.read_text().splitlines()
                                           if not line.lstrip().startswith("#")))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1].strip())
            for line in text.splitlines() if line.strip()]


def sagemaker_call(name: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` coerced to the operation's input shape; fails like boto3 would before sending."""
    model = operation("sagemaker", name)
    params = coerce(params, model.input_shape)
    report = ParamValidator().validate(params, model.input_shape)
    assert not report.has_errors(), report.generate_report()
    return params
