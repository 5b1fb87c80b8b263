"""Plain helpers shared by every test package (ports, moto's server, data), imported where used.

`conftest.py` beside it keeps the fixtures (the session's ``moto`` among them).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow.parquet as pq
import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

CLINC150 = Path(os.environ.get("CLINC150_DIR", "oos-eval/data"))
"""The public CLINC150 dataset (github.com/clinc/oos-eval's ``data/``), never copied into the repository."""


def every_byte(folder: Path) -> bytes:
    """Every byte of every file under ``folder``, plus each Parquet file's decoded values.

    What the redaction tests search for markers: a value must be absent both as bytes and once decoded
    (hidden files are files still being written: their bytes count, they are not decoded).
    """
    chunks = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        chunks.append(path.read_bytes())
        if path.suffix == ".parquet" and not path.name.startswith("."):
            chunks.append(json.dumps(pq.read_table(path).to_pylist(), default=str).encode())
    return b"\n".join(chunks)


def free_port() -> int:
    """A TCP port nobody listens on right now (loopback)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


DUMMY_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",
}
"""Credentials and region for moto: never real ones (``AWS_PROFILE`` is unset beside them)."""

MOTO_START_TIMEOUT_S = 20.0


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


@contextlib.contextmanager
def moto_server(log_path: Path) -> Iterator[MotoServer]:
    """A fresh moto server on a free port, with `DUMMY_AWS_ENV` set meanwhile; stopped after."""
    server = MotoServer(free_port(), log_path)
    with pytest.MonkeyPatch.context() as patch:
        for key, value in DUMMY_AWS_ENV.items():
            patch.setenv(key, value)
        patch.delenv("AWS_PROFILE", raising=False)
        server.start()
        try:
            yield server
        finally:
            server.stop()
