"""The pinned model identity: everything that changes a score, so the pipelines never mix two models.

The GGUF's sha256 is computed once per (path, size, mtime) and remembered in a small JSON file under
the user's cache directory, so a restart does not re-hash a multi-gigabyte file.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scorer import devices, runtime

if TYPE_CHECKING:
    from scorer.runtime import LlamaRuntime

HASH_CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "semif-shadow" / "sha256.json"

# llama.cpp's `enum llama_ftype` (general.file_type in the GGUF) -> the usual quantization name.
FILE_TYPES = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    7: "Q8_0",
    8: "Q5_0",
    9: "Q5_1",
    10: "Q2_K",
    11: "Q3_K_S",
    12: "Q3_K_M",
    13: "Q3_K_L",
    14: "Q4_K_S",
    15: "Q4_K_M",
    16: "Q5_K_S",
    17: "Q5_K_M",
    18: "Q6_K",
    19: "IQ2_XXS",
    20: "IQ2_XS",
    21: "Q2_K_S",
    22: "IQ3_XS",
    23: "IQ3_XXS",
    24: "IQ1_S",
    25: "IQ4_NL",
    26: "IQ3_S",
    27: "IQ3_M",
    28: "IQ2_S",
    29: "IQ2_M",
    30: "IQ4_XS",
    31: "IQ1_M",
    32: "BF16",
    36: "TQ1_0",
    37: "TQ2_0",
    38: "MXFP4_MOE",
}


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    """The ``model`` object of every SemIf response."""

    name: str
    file: str
    sha256: str
    quantization: str
    architecture: str
    runtime: str
    runtime_version: str
    bindings_version: str
    device: str
    n_gpu_layers: int
    n_threads: int
    n_ctx: int
    n_batch: int
    flash_attn: bool
    kv_type: str
    segmentation: str
    batch_invariant: bool = False
    """Scores do not depend on what shares a decode call (``SCORER_BATCH_INVARIANT``: repacked CPU kernels
    off, segments on aligned KV cells; `scorer.cells`). Never on a GPU (`scorer.devices`)."""
    op_offload: bool = False
    """llama.cpp's op offload in effect: batched operations of the CPU's layers may run on the GPU
    (``SCORER_OP_OFFLOAD``; false where no GPU is present)."""
    image_digest: str | None = None
    instance_type: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The identity as a JSON object."""
        return asdict(self)


def file_sha256(path: Path, cache_file: Path = HASH_CACHE) -> str:
    """sha256 of ``path``, remembered by (resolved path, size, mtime) in ``cache_file``."""
    path = path.resolve()
    stat = path.stat()
    key = f"{path}|{stat.st_size}|{stat.st_mtime_ns}"
    cache = _read_cache(cache_file)
    if key in cache:
        return cache[key]
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    cache[key] = digest.hexdigest()
    _write_cache(cache_file, cache)
    return cache[key]


def _read_cache(cache_file: Path) -> dict[str, str]:
    try:
        data = json.loads(cache_file.read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _write_cache(cache_file: Path, cache: dict[str, str]) -> None:
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        tmp = cache_file.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cache, indent=0, sort_keys=True))
        tmp.replace(cache_file)
    except OSError:
        pass  # a read-only home only costs a re-hash next time


def describe(
    rt: LlamaRuntime,
    *,
    segmentation: str,
    batch_invariant: bool = False,
    image_digest: str | None = None,
    instance_type: str | None = None,
) -> ModelIdentity:
    """Build the identity of the model loaded in ``rt``."""
    cfg = rt.config
    file_type = rt.meta("general.file_type")
    quant = FILE_TYPES.get(int(file_type), f"ftype{file_type}") if file_type else rt.description()
    device, op_offload = devices.compute_device(cfg)
    return ModelIdentity(
        name=rt.meta("general.name") or cfg.model_path.stem,
        file=cfg.model_path.name,
        sha256=file_sha256(cfg.model_path),
        quantization=quant,
        architecture=rt.meta("general.architecture") or "unknown",
        runtime="llama.cpp",
        runtime_version=runtime.ggml_commit(),
        bindings_version=f"llama-cpp-python {version('llama-cpp-python')}",
        device=device,
        n_gpu_layers=cfg.n_gpu_layers if device != "cpu" else 0,
        n_threads=cfg.n_threads,
        n_ctx=rt.n_ctx,
        n_batch=cfg.n_batch,
        flash_attn=cfg.flash_attn,
        kv_type=cfg.kv_type,
        segmentation=segmentation,
        batch_invariant=batch_invariant,
        op_offload=op_offload,
        image_digest=image_digest,
        instance_type=instance_type,
    )
