"""The docs' runnable command blocks run as printed, so a quick start that goes stale fails the suite.

A block in ``docs/*.md`` fenced as ```` ```sh runnable ```` is run; any other block is only shown. Each
file's runnable blocks run in order, line by line (backslash continuations joined), in a fresh folder
holding only ``.venv`` and ``shadow/`` (as a checkout after ``make``), with ``.venv/bin`` first on
``PATH``, as a reader with the environment activated would type them. A line runs like one typed into a
shell that stays open: what it exports and where it ``cd``s carry to the next line.

A line that starts a service (``serve``, ``sidecar run``) is started in the background and must answer
its health URL; it keeps running for the file's later lines (a ``curl`` to it) and must exit 0 on
SIGTERM at the end. Services listen on loopback ports the test picks and passes in their variables
(``SCORER_PORT``, ``SHADOW_PORT``), so docs address them as
``localhost:${SHADOW_PORT:-8470}``: the default for a reader, a free port here.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.shadow.conftest import free_port
from tests.test_readme import SERVICE_START_S, SERVICES

ROOT = Path(__file__).resolve().parents[1]
RUNNABLE = re.compile(r"^```sh runnable[ \t]*\n(.*?)^```", flags=re.DOTALL | re.MULTILINE)
LINE_TIMEOUT_S = 300
PORT_VARS = ("SCORER_PORT", "SHADOW_PORT")


def runnable_lines(text: str) -> list[str]:
    """The command lines of a Markdown text's runnable blocks, in order; comments and blanks left out."""
    lines = []
    for block in RUNNABLE.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                lines.append(stripped)
    return lines


def docs_with_runnable_blocks() -> list[Path]:
    """Every ``docs/*.md`` holding at least one runnable block."""
    return sorted(p for p in (ROOT / "docs").glob("*.md") if runnable_lines(p.read_text(encoding="utf-8")))


class Shell:
    """Runs lines one at a time like an open shell: exports and ``cd`` carry over; services stay up."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.cwd = folder
        self.env = env
        self.state = folder.parent / f"{folder.name}.shell-state"
        self.services: list[tuple[str, subprocess.Popen[bytes]]] = []

    def run(self, line: str) -> None:
        """Run ``line``; a service is started and waited for, anything else must exit 0."""
        service = next((v for k, v in SERVICES.items() if k in line.split("#", maxsplit=1)[0]), None)
        if service is not None:
            self._start(line, *service)
            return
        script = f'{line}\nstatus=$?\n{{ pwd; env -0; }} > "{self.state}"\nexit $status'
        done = subprocess.run(["bash", "-c", script], cwd=self.cwd,  # noqa: S603, S607  (the docs' lines)
                              env=self.env, capture_output=True, timeout=LINE_TIMEOUT_S, check=False)
        assert done.returncode == 0, f"{line!r}: exit {done.returncode}: {done.stderr.decode()[-2000:]}"
        cwd, _, env = self.state.read_bytes().partition(b"\n")
        self.cwd = Path(cwd.decode())
        pairs = (item.partition(b"=") for item in env.split(b"\0") if item)
        shell_own = (b"_", b"SHLVL", b"PWD", b"OLDPWD")
        self.env = {k.decode(): v.decode() for k, _, v in pairs if k not in shell_own}

    def _start(self, line: str, port_var: str, path: str) -> None:
        proc = subprocess.Popen(["bash", "-c", line], cwd=self.cwd,  # noqa: S603, S607  (the docs' lines)
                                env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True)
        self.services.append((line, proc))
        deadline = time.monotonic() + SERVICE_START_S
        url = f"http://127.0.0.1:{self.env[port_var]}{path}"
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise AssertionError(f"{line!r} exited at start-up: {proc.communicate()[1].decode()[-2000:]}")
            with contextlib.suppress(urllib.error.URLError, ConnectionError), \
                    urllib.request.urlopen(url, timeout=5) as resp:
                if resp.status == 200:
                    return
            time.sleep(0.1)
        raise AssertionError(f"{line!r} never answered {path}")

    def stop(self) -> None:
        """SIGTERM every service, last started first; each must exit 0."""
        failures = []
        for line, proc in reversed(self.services):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
            if proc.returncode != 0:
                failures.append(f"{line!r}: exit {proc.returncode}: {err.decode()[-2000:]}")
        assert not failures, failures


def test_runnable_blocks_are_found() -> None:
    """The marker is read: a runnable block's lines (continuations joined), not a plain block's."""
    text = ("```sh\nnot run\n```\n```sh runnable\n# a comment\nfirst \\\n  --flag\n\nsecond\n```\n"
            "```sh runnable\nthird\n```\n")
    assert runnable_lines(text) == ["first    --flag", "second", "third"]
    assert docs_with_runnable_blocks(), "no doc marks a runnable block"


@pytest.mark.parametrize("doc", docs_with_runnable_blocks(), ids=lambda p: p.name)
def test_doc_blocks_run_as_printed(doc: Path, tmp_path: Path) -> None:
    """Every line of the doc's runnable blocks exits 0 (services answer, then stop cleanly), in order."""
    folder = tmp_path / "checkout"
    folder.mkdir()
    (folder / ".venv").symlink_to(Path(sys.executable).parents[1])
    (folder / "shadow").symlink_to(ROOT / "shadow")
    venv_bin = str(folder / ".venv" / "bin")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PATH": f"{venv_bin}:{os.environ.get('PATH', '')}"}
    env.update({var: str(free_port()) for var in PORT_VARS})
    shell = Shell(folder, env)
    try:
        for line in runnable_lines(doc.read_text(encoding="utf-8")):
            shell.run(line)
    finally:
        shell.stop()
