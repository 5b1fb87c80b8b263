"""Importing `scorer.runtime` initialises nothing in llama.cpp; the first runtime does, once."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import scorer.runtime as runtime
before = runtime.init_backend.cache_info().currsize
runtime.system_info()
runtime.system_info()
info = runtime.init_backend.cache_info()
print(before, info.currsize, info.misses)
"""


def test_the_backend_is_initialised_on_first_use_only() -> None:
    """In a fresh interpreter: nothing initialised after the import; one initialisation for two uses."""
    done = subprocess.run([sys.executable, "-c", PROBE],  # noqa: S603  (our own probe)
                          capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.split() == ["0", "1", "1"]
