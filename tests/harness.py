"""Plain helpers of the tests tests (data, runs, servers), imported where used.

`conftest.py` beside it keeps the fixtures.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq

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
