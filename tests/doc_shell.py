"""Runs documented command lines as a reader would type them: one open shell, in a fresh checkout folder.

`Shell` keeps one ``bash`` open for the whole document: what a line exports, where it ``cd``s, the jobs it
puts in the background (``cmd > log 2>&1 &``), ``$!``, ``%1``, ``kill`` and ``wait`` carry to the next
line as in a terminal. A line that starts a service in the foreground (``serve``, ``sidecar run``: "in a
second terminal") is started beside the shell, must answer its health URL, keeps running for the later
lines and must exit 0 on SIGTERM at the end. Background jobs the document leaves running fail the run:
a quick start must say how to stop what it started.

`checkout` makes the folder: ``.venv`` (this interpreter's) and the example catalogs, with the scorer's
default address (``127.0.0.1:8080``) replaced by the port the test picked for ``SCORER_PORT``, since
several test runs share this machine and 8080 may be taken; docs address services as
``localhost:${SHADOW_PORT:-8470}`` (the default for a reader, a free port here).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

from tests.harness import free_port

ROOT = Path(__file__).resolve().parents[1]
SERVICES = {" serve": ("SCORER_PORT", "/ping"), "sidecar run": ("SHADOW_PORT", "/healthz")}
"""A foreground line holding this starts a service: (its port variable, its health path)."""
SERVICE_START_S = 120.0  # the scorer loads the model first
LINE_TIMEOUT_S = 300.0
PORT_VARS = ("SCORER_PORT", "SHADOW_PORT")
SCORER_DEFAULT = "127.0.0.1:8080"
DONE = "__doc_shell_done__"


def checkout(folder: Path) -> dict[str, str]:
    """A fresh folder as after ``make``; the environment to run its lines in (free ports, venv first)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ".venv").symlink_to(Path(sys.executable).parents[1])
    ports = {var: str(free_port()) for var in PORT_VARS}
    examples = folder / "shadow" / "examples"
    examples.mkdir(parents=True)
    for catalog in (ROOT / "shadow" / "examples").glob("*.yaml"):
        text = catalog.read_text(encoding="utf-8")
        scorer = f"127.0.0.1:{ports['SCORER_PORT']}"
        (examples / catalog.name).write_text(text.replace(SCORER_DEFAULT, scorer))
    venv_bin = str(folder / ".venv" / "bin")
    path = f"{venv_bin}:{os.environ.get('PATH', '')}"
    return {**os.environ, "PYTHONPATH": str(ROOT), "PATH": path, **ports}


def is_background(line: str) -> bool:
    """Whether the line (its comment left out) ends in a single ``&``."""
    code = line.split(" #", maxsplit=1)[0].rstrip()
    return code.endswith("&") and not code.endswith("&&")


def _pump(stream: IO[bytes], out: queue.Queue[str]) -> None:
    for raw in iter(stream.readline, b""):
        out.put(raw.decode(errors="replace"))


class Shell:
    """One open bash for a document's lines; foreground services started beside it."""

    def __init__(self, folder: Path, env: dict[str, str]) -> None:
        self.state = folder.parent / f"{folder.name}.shell-state"
        self.bash = subprocess.Popen(["bash", "--noprofile", "--norc"], cwd=folder, env=env,  # noqa: S607
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        assert self.bash.stdin is not None
        assert self.bash.stdout is not None
        self.stdin = self.bash.stdin
        self.output: queue.Queue[str] = queue.Queue()
        self.pump = threading.Thread(target=_pump, args=(self.bash.stdout, self.output), daemon=True)
        self.pump.start()
        self.services: list[tuple[str, subprocess.Popen[bytes]]] = []

    def run(self, line: str) -> str:
        """Run ``line``; its output. A foreground service is started and waited for; anything else exits 0."""
        service = next((v for k, v in SERVICES.items() if k in line.split("#", maxsplit=1)[0]), None)
        if service is not None and not is_background(line):
            self._start(line, *service)
            return ""
        script = f'{line}\n__s=$?; {{ pwd; env -0; }} > "{self.state}"; echo; echo "{DONE} $__s"\n'
        self.stdin.write(script.encode())
        self.stdin.flush()
        lines: list[str] = []
        deadline = time.monotonic() + LINE_TIMEOUT_S
        while True:
            try:
                got = self.output.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                said = "".join(lines)[-2000:]
                raise AssertionError(f"{line!r}: no end after {LINE_TIMEOUT_S:.0f} s: {said}") from None
            if got.startswith(DONE):
                status = int(got.split()[1])
                break
            lines.append(got)
        text = "".join(lines)[:-1]  # the newline echoed before the marker
        assert status == 0, f"{line!r}: exit {status}: {text[-2000:]}"
        return text

    def _environment(self) -> tuple[Path, dict[str, str]]:
        """The shell's current folder and exported variables (written after each line)."""
        cwd, _, env = self.state.read_bytes().partition(b"\n")
        pairs = (item.partition(b"=") for item in env.split(b"\0") if item)
        shell_own = (b"_", b"SHLVL", b"PWD", b"OLDPWD", b"__s")
        return Path(cwd.decode()), {k.decode(): v.decode() for k, _, v in pairs if k not in shell_own}

    def _start(self, line: str, port_var: str, path: str) -> None:
        if not self.state.exists():
            self.run("true")
        cwd, env = self._environment()
        proc = subprocess.Popen(["bash", "-c", line], cwd=cwd, env=env,  # noqa: S603, S607  (the docs' lines)
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        self.services.append((line, proc))
        deadline = time.monotonic() + SERVICE_START_S
        url = f"http://127.0.0.1:{env[port_var]}{path}"
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
        """Fail on background jobs the document left running; SIGTERM foreground services (each exits 0)."""
        failures = []
        if self.bash.poll() is None:
            with contextlib.suppress(AssertionError):
                left = self.run("jobs -r")
                if left.strip():
                    failures.append(f"background jobs left running (the document must stop them): {left}")
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.bash.pid, signal.SIGTERM)
            self.bash.wait(timeout=60)
        self.stdin.close()
        self.pump.join(timeout=30)
        if self.bash.stdout is not None:
            self.bash.stdout.close()
        for line, proc in reversed(self.services):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
            if proc.returncode != 0:
                failures.append(f"{line!r}: exit {proc.returncode}: {err.decode()[-2000:]}")
        assert not failures, failures


def scored_rows(stats_output: str) -> int:
    """The ``scored`` proposals that ``records stats`` reports (its first JSON line)."""
    first = json.loads(stats_output.strip().splitlines()[0])
    return int(first["proposals"]["status"].get("scored", 0))
