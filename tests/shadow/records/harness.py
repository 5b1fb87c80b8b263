"""Plain helpers of the shadow.records tests (data, runs, servers), imported where used.

`conftest.py` beside it keeps the fixtures.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

MOTO_START_TIMEOUT_S = 20.0


def free_port() -> int:
    """A TCP port nobody listens on right now (loopback)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class MotoServer:
    """``moto_server`` in server mode on a loopback port; can be stopped and started again."""

    def __init__(self, port: int, log_path: Path) -> None:
        self.port = port
        self.endpoint = f"http://127.0.0.1:{port}"
        self._log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until it answers."""
        binary = Path(sys.executable).with_name("moto_server")
        with self._log_path.open("ab") as log:
            self._proc = subprocess.Popen([str(binary), "-H", "127.0.0.1", "-p", str(self.port)],  # noqa: S603  (our venv's binary)
                                          stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + MOTO_START_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(f"{self.endpoint}/moto-api/", timeout=1).close()  # noqa: S310  (http on loopback)
            except OSError:
                time.sleep(0.1)
            else:
                return
        raise RuntimeError(f"moto_server did not start on port {self.port}")

    def stop(self) -> None:
        """Stop the server (its buckets are gone when it starts again)."""
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(timeout=10)
            self._proc = None
