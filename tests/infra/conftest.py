"""Fixtures for the infra tests: an AWS API served by moto on loopback, and the real scorer process."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 30.0
DECISION = {"decision_id": "d1", "state": "charged twice", "question": "Which team?", "options": ["a", "b"]}
DUMMY_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}


def free_port() -> int:
    """A TCP port nobody listens on right now (loopback)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


@pytest.fixture(scope="module")
def moto_endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``moto_server`` (server mode) on a free loopback port, with dummy credentials set."""
    port = free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    with pytest.MonkeyPatch.context() as patch:
        for key, value in DUMMY_AWS_ENV.items():
            patch.setenv(key, value)
        patch.delenv("AWS_PROFILE", raising=False)
        with log.open("wb") as out:
            proc = subprocess.Popen(  # noqa: S603  (our venv's moto_server, fixed arguments)
                [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        endpoint = f"http://127.0.0.1:{port}"
        try:
            wait_for(f"{endpoint}/moto-api/")
            yield endpoint
        finally:
            proc.terminate()
            proc.wait(timeout=10)


@dataclass
class ScorerRun:
    """What a real `serve` process showed: its JSON log lines and its Prometheus text."""

    log_lines: list[dict[str, object]]
    metrics_text: str


def _request(url: str, data: bytes | None = None) -> None:
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})  # noqa: S310
    with contextlib.suppress(urllib.error.HTTPError):  # a 503 is the point: answers count by status
        urllib.request.urlopen(request, timeout=5).close()  # noqa: S310  (http on loopback)


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
