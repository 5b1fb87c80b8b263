"""SCORER_* settings: one class, built once in `main` and passed in (tests build it directly)."""

from __future__ import annotations

import os
from pathlib import Path  # noqa: TC003  (pydantic resolves the annotation at run time)
from typing import Literal

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _default_threads() -> int:
    return max(1, len(os.sched_getaffinity(0)))


class ScorerSettings(BaseSettings):
    """How the scorer loads and runs its model. Every field is also a ``SCORER_<NAME>`` variable."""

    model_config = SettingsConfigDict(env_prefix="SCORER_", extra="ignore")

    model_path: Path | None = Field(
        default=None,
        description="GGUF to load; unset: the first .gguf under SM_MODEL_DIR, else the embedded default",
    )
    n_ctx: int = Field(default=4096, ge=256, description="context window in tokens")
    n_batch: int = Field(
        default=512, ge=256, description="tokens per llama_decode call (>= 256 option branches)"
    )
    n_threads: int = Field(default_factory=_default_threads, ge=1, description="CPU threads for llama.cpp")
    n_gpu_layers: int = Field(
        default=0, ge=-1, description="layers offloaded to the GPU (-1: all); CUDA build only"
    )
    flash_attn: bool = Field(default=False, description="llama.cpp flash attention (changes scores slightly)")
    kv_type: Literal["f32", "f16"] = Field(
        default="f32",
        description="KV cache precision; f32 makes a decision's scores independent of its "
        "batch mates (f16 moves them by up to ~0.1 nats), at twice the cache memory",
    )
    batch_options: bool = Field(
        default=True,
        description="decode all options' tokens in one call (faster; within 0.1 nats of one at a time)",
    )
    batch_invariant: bool = Field(
        default=False,
        description="a decision's scores do not depend on what shares its decode calls (repacked CPU "
        "kernels off, segments on aligned KV cells); turns cross-request batching on by default",
    )
    op_offload: bool | None = Field(
        default=None,
        description="llama.cpp's op offload: where a GPU is present, large batched operations on the CPU's "
        "layers run on it, even with no layer offloaded (unset: on, off in the batch-invariant mode)",
    )
    prefix_cache: bool = Field(
        default=True, description="reuse the static prefix's KV cells between decisions"
    )
    logit_memo: int = Field(
        default=0, ge=0, le=65536,
        description="keep the raw option scores of the last N distinct prompts: the same prompt again "
        "(another candidate's normalization on this model, a retry) is answered without a decode (0: off)",
    )
    image_digest: str | None = Field(
        default=None, description="container image digest, recorded in the identity"
    )
    release_record: Path | None = Field(
        default=None,
        description="release.json from `semif-shadow release-record`: serve refuses to start unless the "
        "loaded model is exactly that release",
    )
    release_record_sha256: str | None = Field(
        default=None, pattern="^[0-9a-fA-F]{64}$", description="the release record file's own sha256, checked"
    )
    # -- the HTTP server (`semif-shadow serve`, bare `serve`) ------------------------------------
    host: str = Field(default="127.0.0.1", description="listen address (the SageMaker image sets 0.0.0.0)")
    port: int = Field(default=8080, ge=1, le=65535, description="listen port (SageMaker: 8080)")
    queue_size: int = Field(default=32, ge=1, description="requests waiting for the model; beyond: 503")
    max_body_bytes: int = Field(default=1 << 20, ge=1024, description="request body cap (413 beyond)")
    retry_after_s: int = Field(default=1, ge=0, description="Retry-After on 503 overloaded")
    cross_batch: bool | None = Field(
        default=None,
        description="score waiting decisions together (unset: on in the batch-invariant mode, where the "
        "scores do not move; off otherwise, where they move within the option-batching tolerance)",
    )
    cross_batch_max: int = Field(
        default=64, ge=1, le=256,
        description="decisions taken off the queue together; the engine packs them into decode calls "
        "within SCORER_N_BATCH tokens and 254 sequences (a larger SCORER_N_BATCH puts more in one call)",
    )
    batch_wait_ms: float = Field(
        default=2.0, ge=0, le=100,
        description="cross-request batching: how long an idle server waits for others to join a decision",
    )
    shutdown_grace_s: float = Field(default=25.0, ge=0, description="SIGTERM: time to finish queued work")
    chat_max_tokens: int = Field(default=256, ge=1, description="max_tokens when a chat body gives none")
    instance_type: str | None = Field(default=None, description="instance type, recorded in the identity")

    @model_validator(mode="after")
    def _invariant_without_op_offload(self) -> ScorerSettings:
        if self.batch_invariant and self.op_offload:
            raise ValueError("SCORER_OP_OFFLOAD=true: the batch-invariant mode runs with op offload off")
        return self

    @property
    def offloading_ops(self) -> bool:
        """Whether llama.cpp may offload batched ops to a GPU (``op_offload``, else the mode's default)."""
        return not self.batch_invariant if self.op_offload is None else self.op_offload

    @property
    def cross_batching(self) -> bool:
        """Whether the server scores waiting decisions together (``cross_batch``, else the mode's default)."""
        return self.batch_invariant if self.cross_batch is None else self.cross_batch
