"""The README's command lines run as printed, in order, from a fresh folder."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.shadow.conftest import free_port

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = ("make demo", "make test")  # the set-up and the suite themselves
SERVICES = {" serve": ("SCORER_PORT", "/ping"), "sidecar run": ("SHADOW_PORT", "/healthz")}
SERVICE_START_S = 120.0  # the scorer loads the model first


def readme_lines() -> list[str]:
    """Each command line of the README's ``sh`` blocks, backslash continuations joined."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    lines = [line.strip() for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    return [line for line in lines if line and not line.startswith("#") and not line.startswith(SKIPPED)]


def run_service(line: str, cwd: Path, env: dict[str, str], port_var: str, path: str) -> None:
    """Start a service line, wait until its health URL answers 200, SIGTERM it: it must exit 0."""
    port = free_port()
    proc = subprocess.Popen(["bash", "-c", line], cwd=cwd, env={**env, port_var: str(port)},  # noqa: S603, S607  (the README's lines)
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + SERVICE_START_S
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"{line!r} exited at start-up"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as resp:
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        else:
            raise AssertionError(f"{line!r} never answered {path}")
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, f"{line!r}: exit {proc.returncode}: {err.decode()[-2000:]}"


def test_readme_command_lines_run_as_printed(tmp_path: Path) -> None:
    """Every README command line (but ``make demo`` / ``make test``) exits 0 from a fresh folder.

    The folder holds only ``.venv`` (this interpreter's) and ``shadow/`` (for the example catalog), as a
    checkout after ``make`` would. Services (``serve``, ``sidecar run``) must answer their health URL and
    stop cleanly on SIGTERM; their port comes from their variable (``SCORER_PORT``, ``SHADOW_PORT``) so
    the test does not collide with a running one. The lines run in order: ``records stats`` reads what
    the sidecar wrote.
    """
    (tmp_path / ".venv").symlink_to(Path(sys.executable).parents[1])
    (tmp_path / "shadow").symlink_to(ROOT / "shadow")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    lines = readme_lines()
    assert any("sidecar run" in line for line in lines)
    for line in lines:
        service = next((v for k, v in SERVICES.items() if k in line.split("#")[0]), None)
        if service is not None:
            run_service(line, tmp_path, env, *service)
            continue
        done = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True,  # noqa: S603, S607  (the README's lines)
                              timeout=300, check=False)
        assert done.returncode == 0, f"{line!r}: exit {done.returncode}: {done.stderr.decode()[-2000:]}"
