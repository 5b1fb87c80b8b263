"""Fixtures for the infra tests: an AWS API served by moto on loopback, and the real scorer process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.harness import free_port
from tests.infra.harness import DECISION, ROOT, START_TIMEOUT_S, ScorerRun, _request, wait_for

if TYPE_CHECKING:
    from tests.harness import MotoServer


@pytest.fixture(scope="module")
def moto_endpoint(moto: MotoServer) -> str:
    """The endpoint of the module's moto server (its IAM and stacks start empty), dummy credentials set."""
    return moto.endpoint


@pytest.fixture(scope="module")
def scorer_with_broken_model(tmp_path_factory: pytest.TempPathFactory) -> ScorerRun:
    """The bare `serve` command SageMaker runs, given a corrupt GGUF.

    It logs the load failure, keeps answering /ping (503) and /invocations (503), and serves /metrics.
    Stopped with SIGTERM.
    """
    tmp = tmp_path_factory.mktemp("scorer")
    bad = tmp / "model" / "broken.gguf"
    bad.parent.mkdir()
    bad.write_bytes(b"GGUF" + os.urandom(4096))
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SCORER_MODEL_PATH": str(bad), "SCORER_PORT": str(port),
           "SCORER_HOST": "127.0.0.1", "SCORER_N_THREADS": "1", "SCORER_SHUTDOWN_GRACE_S": "1"}
    log = tmp / "serve.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(  # noqa: S603  (our console script, fixed arguments)
            [str(Path(sys.executable).with_name("serve")), "serve"], env=env, stdout=out, stderr=out
        )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(f"{base}/ping")
        deadline = time.monotonic() + START_TIMEOUT_S
        while b"model load failed" not in log.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.1)
        _request(f"{base}/ping")
        _request(f"{base}/invocations", data=json.dumps(DECISION).encode())
        _request(f"{base}/metrics")
        with urllib.request.urlopen(f"{base}/metrics", timeout=5) as response:  # noqa: S310
            metrics_text = response.read().decode()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    return ScorerRun(log_lines=lines, metrics_text=metrics_text)
