"""Imported first by the CUDA run's Python (bench/cuda/device.sh copies it into the venv): llama_cpp first.

On one CUDA image, numpy or another extension imported before llama_cpp made `llama_model_load_from_file`
crash (two copies of a shared library); loading llama_cpp first avoided it.
"""

import contextlib

with contextlib.suppress(ImportError):
    import llama_cpp  # noqa: F401  (imported for its side effect: its libraries load first)
