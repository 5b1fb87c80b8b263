"""Plain helpers of the tests tests (data, runs, servers), imported where used.

`conftest.py` beside it keeps the fixtures.
"""

from __future__ import annotations

import os
from pathlib import Path

CLINC150 = Path(os.environ.get("CLINC150_DIR", "oos-eval/data"))
"""The public CLINC150 dataset (github.com/clinc/oos-eval's ``data/``), never copied into the repository."""
