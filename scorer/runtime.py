"""A thin, typed layer over llama.cpp's low-level C API (through llama-cpp-python's ctypes bindings).

The high-level ``llama_cpp.Llama`` holds one sequence and only fills logits with ``logits_all=True``;
the engine needs several sequences sharing KV cells (one per option branch) and logits for exactly the
tokens it asks for, so it talks to the C API here. Nothing outside this module touches ctypes.
"""

from __future__ import annotations

import ctypes
import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import llama_cpp
import numpy as np

from scorer.errors import ModelError, RuntimeFailure
from scorer.logprobs import FloatArray, RowReducer, log_softmax_row

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from scorer.settings import ScorerSettings

log = logging.getLogger("scorer.runtime")

_GGML_LOG_LEVEL_ERROR = 4
GGML_TYPES = {"f32": 0, "f16": 1}  # enum ggml_type


def _forward_llama_log(level: int, text: bytes, _user_data: ctypes.c_void_p) -> None:
    if level == _GGML_LOG_LEVEL_ERROR:
        log.error("llama.cpp: %s", text.decode("utf-8", "replace").rstrip())


# llama.cpp keeps a raw pointer to this callback for the life of the process: it must never be freed
# (a freed callback crashes the next log line), so it is a module-level constant, handed over once.
_LOG_CALLBACK = llama_cpp.llama_log_callback(_forward_llama_log)


@functools.cache
def init_backend() -> None:
    """Route llama.cpp's log lines to `log` and initialise its backend: once, on first use, not at import."""
    llama_cpp.llama_log_set(_LOG_CALLBACK, ctypes.c_void_p(0))
    llama_cpp.llama_backend_init()


@dataclass(frozen=True, slots=True)
class RuntimeConfig:
    """Everything that shapes the llama.cpp context (and therefore the scores)."""

    model_path: Path
    n_ctx: int = 4096
    n_batch: int = 512
    n_threads: int = 2
    n_gpu_layers: int = 0
    flash_attn: bool = False
    n_seq_max: int = 256
    kv_type: str = "f32"  # "f32" or "f16"; f32 makes scores independent of how tokens share a batch
    repack: bool = True
    """llama.cpp's repacked CPU weight layouts (``use_extra_bufts``): faster GEMMs whose arithmetic
    depends on how many tokens a call holds, so off in the batch-invariant mode."""
    op_offload: bool = True
    """llama.cpp's op offload: where a GPU is present, large batched operations on the CPU's layers
    run on it (even with no layer offloaded), so off in the batch-invariant mode."""

    @classmethod
    def from_settings(cls, settings: ScorerSettings, model_path: Path) -> RuntimeConfig:
        """The llama.cpp context of an engine with ``settings``, on the resolved ``model_path``."""
        return cls(
            model_path=model_path,
            n_ctx=settings.n_ctx,
            n_batch=settings.n_batch,
            n_threads=settings.n_threads,
            n_gpu_layers=settings.n_gpu_layers,
            kv_type=settings.kv_type,
            flash_attn=settings.flash_attn,
            n_seq_max=min(256, settings.n_batch),  # sequence 0 the prefix, the last the pads: 254 branches
            repack=not settings.batch_invariant,
            op_offload=settings.offloading_ops,
        )


@dataclass(frozen=True, slots=True)
class Token:
    """One token placed in a decode batch."""

    id: int
    pos: int
    seq_ids: tuple[int, ...]
    logits: bool


class LlamaRuntime:
    """One model, one context with a unified KV cache shared by up to ``n_seq_max`` sequences."""

    def __init__(self, config: RuntimeConfig) -> None:
        if config.n_batch < config.n_seq_max:
            raise ValueError("n_batch must be >= n_seq_max (llama.cpp aborts otherwise)")
        self.config = config
        init_backend()
        model_params = llama_cpp.llama_model_default_params()
        model_params.n_gpu_layers = config.n_gpu_layers
        model_params.use_extra_bufts = config.repack
        self._model = llama_cpp.llama_model_load_from_file(str(config.model_path).encode(), model_params)
        if not self._model:
            raise ModelError(f"llama.cpp could not load {config.model_path}")
        ctx_params = llama_cpp.llama_context_default_params()
        ctx_params.n_ctx = config.n_ctx
        ctx_params.n_batch = config.n_batch
        ctx_params.n_ubatch = config.n_batch
        ctx_params.n_seq_max = config.n_seq_max
        ctx_params.n_threads = config.n_threads
        ctx_params.n_threads_batch = config.n_threads
        ctx_params.flash_attn_type = (
            llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
            if config.flash_attn
            else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
        )
        ctx_params.type_k = ctx_params.type_v = GGML_TYPES[config.kv_type]
        ctx_params.kv_unified = True  # option branches share the prefix's cells
        ctx_params.swa_full = True  # keep every sliding-window cell so a cached prefix stays whole
        ctx_params.no_perf = True
        ctx_params.op_offload = config.op_offload
        self._ctx = llama_cpp.llama_init_from_model(self._model, ctx_params)
        if not self._ctx:
            llama_cpp.llama_model_free(self._model)
            raise ModelError(f"llama.cpp could not create a context for {config.model_path}")
        self._vocab = llama_cpp.llama_model_get_vocab(self._model)
        self._memory = llama_cpp.llama_get_memory(self._ctx)
        self.n_vocab: int = llama_cpp.llama_vocab_n_tokens(self._vocab)
        self.n_ctx: int = llama_cpp.llama_n_ctx(self._ctx)
        self.n_swa: int = llama_cpp.llama_model_n_swa(self._model)
        self._batch = llama_cpp.llama_batch_init(config.n_batch, 0, config.n_seq_max)
        self._scratch = np.empty(self.n_vocab, dtype=np.float32)
        self._reducer = RowReducer(self.n_vocab, config.n_threads)
        fields = (self._batch.token, self._batch.pos, self._batch.n_seq_id, self._batch.logits)
        self._fields = [np.ctypeslib.as_array(f, shape=(config.n_batch,)) for f in fields]
        self._seq_rows = [self._batch.seq_id[i] for i in range(config.n_batch)]
        self._closed = False

    # -- text <-> tokens ------------------------------------------------------------------------

    def tokenize(self, text: str, *, add_special: bool = True, parse_special: bool = False) -> list[int]:
        """Tokens of ``text``, BOS added where the model's metadata says so.

        Special tokens written in the text are not parsed as control tokens unless asked (state is
        untrusted).
        """
        raw = text.encode("utf-8")
        capacity = len(raw) + 8
        buf = (llama_cpp.llama_token * capacity)()
        n = llama_cpp.llama_tokenize(self._vocab, raw, len(raw), buf, capacity, add_special, parse_special)
        if n < 0:
            raise RuntimeFailure(f"tokenizer needed {-n} slots, had {capacity}")
        return list(buf[:n])

    def detokenize(self, tokens: Sequence[int]) -> str:
        """Text of ``tokens`` (special tokens removed)."""
        if not tokens:
            return ""
        arr = (llama_cpp.llama_token * len(tokens))(*tokens)
        capacity = 16 * len(tokens) + 16
        out = ctypes.create_string_buffer(capacity)
        n = llama_cpp.llama_detokenize(self._vocab, arr, len(tokens), out, capacity, True, False)  # noqa: FBT003
        if n < 0:
            raise RuntimeFailure("detokenize buffer too small")
        return out.raw[:n].decode("utf-8", "ignore")

    def piece(self, token: int, *, special: bool = False) -> bytes:
        """The bytes of one token (may be part of a UTF-8 character); ``special`` renders control tokens."""
        buf = ctypes.create_string_buffer(64)
        n = llama_cpp.llama_token_to_piece(self._vocab, token, buf, 64, 0, special)
        return buf.raw[: max(n, 0)]

    def is_eog(self, token: int) -> bool:
        """Whether ``token`` ends generation (EOS, end of turn, ...)."""
        return bool(llama_cpp.llama_vocab_is_eog(self._vocab, token))

    def chat_prompt(self, messages: Sequence[tuple[str, str]]) -> str:
        """Render ``(role, content)`` messages with the model's chat template (built-in one if none)."""
        template = llama_cpp.llama_model_chat_template(self._model, None)
        if not template:  # base models ship none: use llama.cpp's built-in one for the family
            template = (
                b"gemma" if (self.meta("general.architecture") or "").startswith("gemma") else b"chatml"
            )
        encoded = [(role.encode(), content.encode()) for role, content in messages]
        chat = (llama_cpp.llama_chat_message * len(encoded))(
            *(llama_cpp.llama_chat_message(role, content) for role, content in encoded)
        )
        capacity = 2 * sum(len(r) + len(c) for r, c in encoded) + 256
        buf = ctypes.create_string_buffer(capacity)
        n = llama_cpp.llama_chat_apply_template(template, chat, len(encoded), True, buf, capacity)  # noqa: FBT003
        if n > capacity:
            buf = ctypes.create_string_buffer(n)
            n = llama_cpp.llama_chat_apply_template(template, chat, len(encoded), True, buf, n)  # noqa: FBT003
        if n < 0:
            raise RuntimeFailure("llama.cpp does not know this model's chat template")
        return buf.raw[:n].decode("utf-8", "replace")

    def argmax_at(self, batch_index: int) -> int:
        """The most likely next token after the last batch's token ``batch_index`` (greedy)."""
        ptr = llama_cpp.llama_get_logits_ith(self._ctx, batch_index)
        if not ptr:
            raise RuntimeFailure(f"no logits for batch index {batch_index}")
        return int(np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).argmax())

    # -- decoding -------------------------------------------------------------------------------

    def decode(self, tokens: Sequence[Token]) -> None:
        """Run one ``llama_decode`` over ``tokens`` (at most ``n_batch``), as one call."""
        if not tokens:
            return
        if len(tokens) > self.config.n_batch:
            raise ValueError(f"{len(tokens)} tokens exceed n_batch={self.config.n_batch}")
        n = len(tokens)
        token, pos, n_seq_id, logits = self._fields  # numpy views of the batch's arrays, set in bulk
        token[:n] = [t.id for t in tokens]
        pos[:n] = [t.pos for t in tokens]
        n_seq_id[:n] = [len(t.seq_ids) for t in tokens]
        logits[:n] = [t.logits for t in tokens]
        for row, tok in zip(self._seq_rows, tokens):  # noqa: B905  (rows: n_batch of them, tokens: fewer)
            for j, seq in enumerate(tok.seq_ids):
                row[j] = seq
        self._batch.n_tokens = n
        rc = llama_cpp.llama_decode(self._ctx, self._batch)
        if rc != 0:
            raise RuntimeFailure(f"llama_decode returned {rc} for a batch of {len(tokens)} tokens")

    def log_softmax_at(self, batch_index: int, token_ids: Sequence[int]) -> FloatArray:
        """Log-probabilities of ``token_ids`` under the logits of the last batch's token ``batch_index``."""
        return log_softmax_row(self._row(batch_index), token_ids, self._scratch)

    def log_probs(self, picks: Sequence[tuple[int, Sequence[int]]]) -> list[FloatArray]:
        """`log_softmax_at` of each ``(batch_index, token_ids)``, reduced together (`scorer.logprobs`)."""
        return self._reducer.reduce([(self._row(index), ids) for index, ids in picks])

    def _row(self, batch_index: int) -> np.ndarray[Any, np.dtype[np.float32]]:
        ptr = llama_cpp.llama_get_logits_ith(self._ctx, batch_index)
        if not ptr:
            raise RuntimeFailure(f"no logits for batch index {batch_index}")
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    # -- KV memory ------------------------------------------------------------------------------

    def clear(self) -> None:
        """Forget every cell (a cold cache)."""
        llama_cpp.llama_memory_clear(self._memory, False)  # noqa: FBT003  (metadata only; empty cells are masked)

    def seq_rm(self, seq_id: int, p0: int, p1: int = -1) -> None:
        """Remove ``seq_id``'s cells with positions in ``[p0, p1)`` (``seq_id`` -1: any sequence)."""
        if not llama_cpp.llama_memory_seq_rm(self._memory, seq_id, p0, p1):
            raise RuntimeFailure(f"could not remove seq {seq_id} [{p0}, {p1})")

    def seq_cp(self, src: int, dst: int, p0: int = -1, p1: int = -1) -> None:
        """Let ``dst`` share ``src``'s cells with positions in ``[p0, p1)``."""
        llama_cpp.llama_memory_seq_cp(self._memory, src, dst, p0, p1)

    # -- facts for the identity -----------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        """A GGUF metadata value as a string, or None."""
        buf = ctypes.create_string_buffer(256)
        n = llama_cpp.llama_model_meta_val_str(self._model, key.encode(), buf, 256)
        return buf.value.decode("utf-8", "replace") if n >= 0 else None

    def description(self) -> str:
        """llama.cpp's one-line model description, e.g. ``gemma3 270M Q4_K - Medium``."""
        buf = ctypes.create_string_buffer(256)
        llama_cpp.llama_model_desc(self._model, buf, 256)
        return buf.value.decode("utf-8", "replace")

    def close(self) -> None:
        """Free the batch, context and model (idempotent)."""
        if self._closed:
            return
        self._closed = True
        self._reducer.close()
        llama_cpp.llama_batch_free(self._batch)
        llama_cpp.llama_free(self._ctx)
        llama_cpp.llama_model_free(self._model)


def system_info() -> str:
    """llama.cpp's build and CPU feature line (``llama_print_system_info``)."""
    init_backend()
    return bytes(llama_cpp.llama_print_system_info()).decode().strip()


def ggml_commit() -> str:
    """The llama.cpp/ggml revision compiled into the bindings (``unknown`` when the build lacks it)."""
    lib = llama_cpp.llama_cpp._lib  # noqa: SLF001  (the one handle to the loaded library)
    try:
        version, commit = lib.ggml_version, lib.ggml_commit
    except AttributeError:
        return "unknown"
    version.restype = commit.restype = ctypes.c_char_p
    return f"ggml {version().decode()} ({commit().decode()})"


@dataclass(frozen=True, slots=True)
class GpuDevice:
    """A GPU llama.cpp can compute on: a ggml backend device of type GPU or integrated GPU."""

    backend: str
    """The ggml backend's name, e.g. ``CUDA``."""
    name: str
    """The device's name, e.g. ``CUDA0``."""
    description: str
    """What the driver calls it, e.g. ``NVIDIA H100 80GB HBM3``."""


_GPU_DEVICE_TYPES = (1, 2)  # enum ggml_backend_dev_type: GPU, IGPU


def gpu_devices() -> list[GpuDevice]:
    """The GPUs this llama.cpp build can use now, from ggml's backend registry.

    None on a CPU build, and none on a GPU build whose GPUs are hidden (``CUDA_VISIBLE_DEVICES=``):
    llama.cpp's own ``llama_supports_gpu_offload`` asks the same registry.
    """
    init_backend()
    if not llama_cpp.llama_supports_gpu_offload():
        return []
    lib = llama_cpp.llama_cpp._lib  # noqa: SLF001  (the registry is ggml's: not wrapped by the bindings)
    lib.ggml_backend_dev_count.restype = ctypes.c_size_t
    lib.ggml_backend_dev_get.restype = lib.ggml_backend_dev_backend_reg.restype = ctypes.c_void_p
    lib.ggml_backend_dev_get.argtypes = [ctypes.c_size_t]
    lib.ggml_backend_dev_type.restype = ctypes.c_int
    for func in (lib.ggml_backend_dev_type, lib.ggml_backend_dev_backend_reg, lib.ggml_backend_dev_name,
                 lib.ggml_backend_dev_description, lib.ggml_backend_reg_name):
        func.argtypes = [ctypes.c_void_p]
    for func in (lib.ggml_backend_dev_name, lib.ggml_backend_dev_description, lib.ggml_backend_reg_name):
        func.restype = ctypes.c_char_p
    found = []
    for index in range(lib.ggml_backend_dev_count()):
        dev = lib.ggml_backend_dev_get(index)
        if lib.ggml_backend_dev_type(dev) in _GPU_DEVICE_TYPES:
            reg = lib.ggml_backend_dev_backend_reg(dev)
            names = (lib.ggml_backend_reg_name(reg), lib.ggml_backend_dev_name(dev),
                     lib.ggml_backend_dev_description(dev))
            found.append(GpuDevice(*(n.decode() for n in names)))
    return found
