"""``semif-shadow audit serve`` as its own process, on a free loopback port, for browser and crash tests."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from tests.audit import week

if TYPE_CHECKING:
    from collections.abc import Iterator

CLI = str(Path(sys.executable).with_name("semif-shadow"))


def start(root: Path, catalog: Path, spool: Path,
          iso_week: str = week.WEEK) -> tuple[subprocess.Popen[str], str]:
    """Start the workbench on ``iso_week``; ``(process, base URL)`` once it prints the URL it listens on."""
    env = {**os.environ, week.TOKEN_ENV: week.TOKEN}
    proc = subprocess.Popen(  # noqa: S603  (the project's own command)
        [CLI, "audit", "serve", "--root", str(root), "--week", iso_week, "--catalog", str(catalog),
         "--spool", str(spool), "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "http://" not in line:
        proc.kill()
        _, err = proc.communicate(timeout=10)
        raise AssertionError(f"the workbench did not start: {line}{err[-2000:]}")
    return proc, line.strip().rsplit(" ", 1)[-1].rstrip("/")


def stop(proc: subprocess.Popen[str], sig: int = signal.SIGTERM) -> int:
    """Send ``sig`` and wait for the process; its exit status."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)
    deadline = time.monotonic() + 30
    while proc.poll() is None:
        assert time.monotonic() < deadline, "the workbench did not stop"
        time.sleep(0.02)
    proc.communicate(timeout=10)
    return proc.returncode


@contextlib.contextmanager
def running(root: Path, catalog: Path, spool: Path, iso_week: str = week.WEEK) -> Iterator[str]:
    """The workbench's base URL while it runs; stopped with SIGTERM (its store closes) on exit."""
    proc, url = start(root, catalog, spool, iso_week)
    try:
        yield url
    finally:
        assert stop(proc) == 0
