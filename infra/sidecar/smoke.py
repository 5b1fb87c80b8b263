"""The sidecar image's build-time smoke steps; the environment test runs the same file.

    python smoke.py sidecar --catalog catalog.yaml --work DIR   # the image's command, SIGTERM, exit 0
    python smoke.py weekly --work DIR                           # the weekly job: compact, pipelines, review

``sidecar`` starts ``COMMAND`` (the image's ENTRYPOINT and CMD) with the catalog in SHADOW_CATALOG, as the
Kubernetes Deployment does, waits for ``GET /healthz`` to answer 200, sends SIGTERM and wants exit code 0.
``weekly`` runs the CronJob's three steps on a small generated week. Standard library only: the image has
no curl. Any failure exits 1 with the command's own output.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

COMMAND = ["semif-shadow", "sidecar", "run"]
"""The image's ENTRYPOINT + CMD (tests/infra/test_image_env.py checks the Dockerfile says the same)."""
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 60.0
WEEK = "2026-W45"


def fail(what: str, output: str) -> None:
    """Stop the build: what failed, then the tail of the command's output."""
    sys.stderr.write(f"smoke: {what}\n{output[-4000:]}\n")
    raise SystemExit(1)


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def healthy(url: str) -> bool:
    """Whether ``url`` answers 200 now."""
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:  # noqa: S310  (http on loopback)
            return bool(answer.status == 200)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def sidecar(catalog: Path, work: Path) -> None:
    """The image's command on the catalog: /healthz answers 200, SIGTERM ends it with exit 0."""
    port = free_port()
    env = {**os.environ, "SHADOW_CATALOG": str(catalog), "SHADOW_PORT": str(port),
           "SHADOW_RECORDS_ROOT": str(work / "records"), "SHADOW_RECORDS_SPOOL_DIR": str(work / "spool"),
           "SHADOW_TOKEN_TICKETS": "smoke-token", "SHADOW_REDACTION_KEY": "smoke-key-" + "0" * 22,
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    log = work / "sidecar.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(COMMAND, env=env, stdout=out, stderr=subprocess.STDOUT)  # noqa: S603
    deadline = time.monotonic() + START_TIMEOUT_S
    while not healthy(f"http://127.0.0.1:{port}/healthz"):
        if proc.poll() is not None:
            fail(f"{' '.join(COMMAND)} exited with {proc.returncode} at start-up", log.read_text())
        if time.monotonic() > deadline:
            proc.kill()
            fail(f"no 200 from /healthz within {START_TIMEOUT_S:.0f} s", log.read_text())
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        fail(f"still running {STOP_TIMEOUT_S:.0f} s after SIGTERM", log.read_text())
    if code != 0:
        fail(f"exit {code} after SIGTERM", log.read_text())
    print(f"smoke: sidecar answered /healthz and exited 0 on SIGTERM ({' '.join(COMMAND)})")  # noqa: T201


def run(*args: str) -> None:
    """One ``semif-shadow`` command; it must exit 0."""
    done = subprocess.run(["semif-shadow", *args], capture_output=True, text=True, check=False)  # noqa: S603, S607
    if done.returncode != 0:
        fail(f"semif-shadow {' '.join(args)}: exit {done.returncode}", done.stdout + done.stderr)


def weekly(work: Path) -> None:
    """The CronJob's steps on two generated weeks: compact the records, compute the marts, render a review."""
    records, marts, report = work / "records", work / "marts", work / "review.html"
    run("pipelines", "generate", "--root", str(records), "--decisions", "2000", "--weeks", "2",
        "--first-week", "2026-W44", "--drift-week", "-1")
    run("records", "compact", "--root", str(records), "--min-age", "0", "--grace", "0")
    run("pipelines", "run", "--root", str(records), "--out", str(marts), "--week", WEEK)
    run("review", "--marts", str(marts), "--week", WEEK, "--out", str(report))
    if not report.is_file() or report.stat().st_size == 0:
        fail(f"review wrote no {report}", "")
    print(f"smoke: weekly job wrote {report.stat().st_size} bytes of review for {WEEK}")  # noqa: T201


def main() -> None:
    """Parse the step and run it."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("step", choices=["sidecar", "weekly"])
    parser.add_argument("--catalog", type=Path, help="sidecar: the catalog to start on")
    parser.add_argument("--work", type=Path, required=True, help="scratch folder (created)")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    if args.step == "sidecar":
        if args.catalog is None:
            parser.error("sidecar needs --catalog")
        sidecar(args.catalog, args.work)
    else:
        weekly(args.work)


if __name__ == "__main__":
    main()
