"""The demo's child processes: each in its own process group, on a free loopback port, always stopped.

`Services` is a context manager. Every process it starts gets its own session (so a Ctrl-C in the
terminal reaches only the demo, which then stops them in reverse order: SIGTERM to the group, SIGKILL
after a grace) and, on Linux, SIGTERM if the demo itself dies (``PR_SET_PDEATHSIG``). Their stderr
goes to ``<logs>/<name>.log``. Every child started, with its pid and ports, is listed in
``<logs>/processes.json`` (the tests read it to check that nothing is left behind).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from pathlib import Path

PR_SET_PDEATHSIG = 1
STOP_GRACE_S = 30.0


class DemoError(Exception):
    """A demo phase failed: one line for the terminal."""


def free_port() -> int:
    """A loopback port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:  # pragma: no cover  (runs in the child, between fork and exec)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


@dataclass
class Child:
    """One running service."""

    name: str
    proc: subprocess.Popen[bytes]
    ports: tuple[int, ...]
    log: Path


@dataclass
class Services:
    """The running children, stopped in reverse order on exit (however the block ends)."""

    logs: Path
    children: list[Child] = field(default_factory=list)
    started: list[dict[str, object]] = field(default_factory=list)

    def __enter__(self) -> Self:
        self.logs.mkdir(parents=True, exist_ok=True)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_all()

    def start(self, name: str, argv: list[str], env: dict[str, str], ports: tuple[int, ...]) -> Child:
        """Start ``argv`` in a new session with ``env`` added to this environment."""
        log = self.logs / f"{name}.log"
        with log.open("ab") as err:
            proc = subprocess.Popen(argv, env={**os.environ, **env}, stdin=subprocess.DEVNULL,  # noqa: S603  (our own commands)
                                    stdout=err, stderr=err, start_new_session=True,
                                    preexec_fn=_die_with_parent if sys.platform == "linux" else None)  # noqa: PLW1509  (only prctl)
        child = Child(name, proc, ports, log)
        self.children.append(child)
        self.started.append({"name": name, "pid": proc.pid, "ports": list(ports)})
        listing = self.logs / "processes.json"  # written aside, then renamed: never read half-written
        aside = listing.with_name(f".{listing.name}.tmp")
        aside.write_text(json.dumps(self.started), encoding="utf-8")
        aside.replace(listing)
        return child

    def wait_healthy(self, child: Child, url: str, timeout_s: float = 300.0) -> None:
        """Poll ``url`` until it answers 200; the child exiting first is an error naming its log."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if child.proc.poll() is not None:
                raise DemoError(f"{child.name} exited with {child.proc.returncode}: see {child.log}")
            with (contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError),
                  urllib.request.urlopen(url, timeout=2) as resp):  # noqa: S310  (loopback URL)
                if resp.status == 200:
                    return
            time.sleep(0.1)
        raise DemoError(f"{child.name} did not answer {url} within {timeout_s:.0f} s: see {child.log}")

    def stop(self, child: Child, grace_s: float = STOP_GRACE_S) -> int:
        """SIGTERM the child's group, wait up to ``grace_s``, then SIGKILL it; return its exit code."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, signal.SIGTERM)
        try:
            code = child.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.proc.pid, signal.SIGKILL)
            code = child.proc.wait()
        # the group may outlive its leader (the sidecar's relay): make sure it is gone
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, signal.SIGKILL)
        if child in self.children:
            self.children.remove(child)
        return code

    def stop_all(self) -> None:
        """Stop every child, the last started first."""
        for child in reversed(list(self.children)):
            self.stop(child)


def interrupt_on_sigterm() -> None:
    """Turn SIGTERM into KeyboardInterrupt, so the same clean-up runs as on Ctrl-C."""
    def handler(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


