"""The SemIf scoring engine: option log-likelihoods from one shared prefix, with a prefix cache.

Per decision (`Engine.score`):

    prepare   render the prompt, tokenize prompt + option jointly, truncate the state if needed
    prefix    reuse the static segment's KV cells if the previous decision left the same ones,
              else decode it; then decode the per-decision suffix (logits of its last token only)
    options   first tokens read off the suffix's last logits (single-token options cost nothing
              more); longer options are branched as sequences sharing the prefix's cells and decoded
              together (`batch_options`) or one at a time
    respond   normalize, softmax, and pin the prompt and model identity (`scorer.respond`)

The engine is not thread-safe by design: one llama.cpp context, used by one caller at a time (the
server serializes around it); a lock guards against misuse.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from scorer import crossbatch, prompt
from scorer.errors import PromptTooLong
from scorer.identity import ModelIdentity, describe
from scorer.model_files import resolve_model_path
from scorer.respond import FloatArray, normalize, respond, softmax
from scorer.runtime import LlamaRuntime, RuntimeConfig, Token
from scorer.segments import Segmented, segment

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from contracts.semif import ScoreRequest, ScoreResponse
    from scorer.settings import ScorerSettings

PREFIX_SEQ = 0  # the sequence that holds the shared prefix (and the cached static segment)


@dataclass(slots=True)
class EngineStats:
    """Counters for metrics: decisions scored and tokens computed vs reused from the cache."""

    decisions: int = 0
    tokens_computed: int = 0
    tokens_cached: int = 0


@dataclass(frozen=True, slots=True)
class Prepared:
    """A decision ready to decode: its segments and how its state was cut to fit."""

    seg: Segmented
    state_tokens_dropped: int


@dataclass(frozen=True, slots=True)
class Scored:
    """Raw option log-likelihoods of one prepared decision."""

    logits: FloatArray
    cached_tokens: int


class Engine:
    """Scores SemIf requests with one llama.cpp context."""

    def __init__(self, rt: LlamaRuntime, settings: ScorerSettings) -> None:
        self.rt = rt
        self.batch_options = settings.batch_options
        self.prefix_cache = settings.prefix_cache
        self.segmentation = "static|suffix|" + ("options-batched" if self.batch_options else "options-single")
        self.identity: ModelIdentity = describe(
            rt,
            segmentation=self.segmentation,
            image_digest=settings.image_digest,
            instance_type=settings.instance_type,
        )
        self.stats = EngineStats()
        self._cached_static: tuple[int, ...] | None = None
        self._content_free: dict[tuple[str, ...], FloatArray] = {}
        self._static_tokens: dict[str, list[int]] = {}
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: ScorerSettings) -> Engine:
        """Resolve the model file, load it and build an engine."""
        rt = LlamaRuntime(
            RuntimeConfig(
                model_path=resolve_model_path(settings.model_path),
                n_ctx=settings.n_ctx,
                n_batch=settings.n_batch,
                n_threads=settings.n_threads,
                n_gpu_layers=settings.n_gpu_layers,
                kv_type=settings.kv_type,
                flash_attn=settings.flash_attn,
                n_seq_max=min(256, settings.n_batch),
            )
        )
        return cls(rt, settings)

    def close(self) -> None:
        """Free the llama.cpp model and context."""
        with self._lock:
            self.rt.close()

    @contextmanager
    def exclusive(self) -> Iterator[LlamaRuntime]:
        """Hold the context for something other than scoring (generation): the cache starts cold."""
        with self._lock:
            self.rt.clear()
            self._cached_static = None
            yield self.rt

    def warm_up(self) -> None:
        """Run one tiny decode so the first real request does not pay llama.cpp's first-call setup."""
        with self.exclusive() as rt:
            rt.decode([Token(t, i, (PREFIX_SEQ,), logits=False) for i, t in enumerate(rt.tokenize("Hello"))])
            rt.clear()

    # -- public ---------------------------------------------------------------------------------

    def score(self, request: ScoreRequest, *, queue_ms: float = 0.0) -> ScoreResponse:
        """Score one request and return the SemIf response."""
        started = time.perf_counter()
        texts = [o.text for o in request.options]
        with self._lock:
            prepared = self.prepare(request.question, texts, request.state_text())
            norm = request.scoring.normalization
            baseline = self._content_free_logits(request.question, texts) if norm == "pmi" else None
            scored = self.score_prepared(prepared)
        scores = normalize(scored.logits, norm, prepared.seg.options, texts, baseline)
        probs = softmax(scores)
        elapsed = (time.perf_counter() - started) * 1000
        return respond(request, seg=prepared.seg, state_tokens_dropped=prepared.state_tokens_dropped,
                       logits=scored.logits, cached_tokens=scored.cached_tokens, probs=probs,
                       identity=self.identity, timing={"queue": queue_ms, "score": elapsed})

    def score_many(
        self, requests: Sequence[ScoreRequest], *, queue_ms: Sequence[float] | None = None
    ) -> list[ScoreResponse]:
        """Cross-request batching (opt-in): decisions with one static prefix scored in shared calls.

        All suffixes go in one decode and all options' branches in the next, so the scores move within
        the option-batching tolerance and depend on the batch mates (see docs/deploy-sagemaker.md).
        Raises ValueError when the decisions do not share a static prefix or do not fit together.
        """
        started = time.perf_counter()
        with self._lock:
            prepared = [
                self.prepare(r.question, [o.text for o in r.options], r.state_text()) for r in requests
            ]
            segs = [p.seg for p in prepared]
            crossbatch.check_fits(self.rt, segs)
            baselines = [
                self._content_free_logits(r.question, [o.text for o in r.options])
                if r.scoring.normalization == "pmi"
                else None
                for r in requests
            ]
            cached = self._load_static(segs[0])
            all_logits, computed = crossbatch.score_branches(self.rt, segs)
            self.stats.tokens_computed += computed
            self.stats.decisions += len(requests)
            self._keep_static(segs[0], max(len(s.prefix) + max(map(len, s.options)) for s in segs))
        elapsed = (time.perf_counter() - started) * 1000
        waits = list(queue_ms) if queue_ms is not None else [0.0] * len(requests)
        out = []
        for request, prep, logits, baseline, wait in zip(
            requests, prepared, all_logits, baselines, waits, strict=True
        ):
            texts = [o.text for o in request.options]
            probs = softmax(
                normalize(logits, request.scoring.normalization, prep.seg.options, texts, baseline)
            )
            out.append(
                respond(request, seg=prep.seg, state_tokens_dropped=prep.state_tokens_dropped, logits=logits,
                        cached_tokens=cached, probs=probs, identity=self.identity,
                        timing={"queue": wait, "score": elapsed}, batched=len(requests))
            )
        return out

    def prepare(self, question: str, option_texts: Sequence[str], state: str) -> Prepared:
        """Render, tokenize and segment a decision; cut the state's tail if it does not fit."""
        seg = self._segment(prompt.render(question, option_texts, state), option_texts)
        for i, option in enumerate(seg.options):
            if len(option) > self.rt.config.n_batch:
                raise PromptTooLong(
                    f"option has {len(option)} tokens; at most n_batch={self.rt.config.n_batch} are scored",
                    field=f"options[{i}].text",
                )
        if seg.kv_cells_needed() <= self.rt.n_ctx:
            return Prepared(seg, 0)
        bare = self._segment(prompt.render(question, option_texts, ""), option_texts)
        if bare.kv_cells_needed() > self.rt.n_ctx:
            raise PromptTooLong(
                f"question and options need {bare.kv_cells_needed()} tokens; the context holds "
                f"{self.rt.n_ctx}",
                field="options",
            )
        state_tokens = self.rt.tokenize(state, add_special=False)
        keep = len(state_tokens) - (seg.kv_cells_needed() - self.rt.n_ctx)
        while True:
            keep = max(0, keep)
            text = self.rt.detokenize(state_tokens[:keep])
            seg = self._segment(prompt.render(question, option_texts, text), option_texts)
            excess = seg.kv_cells_needed() - self.rt.n_ctx
            if excess <= 0 or keep == 0:
                return Prepared(seg, len(state_tokens) - keep)
            keep -= excess

    def _segment(self, rendered: prompt.RenderedPrompt, option_texts: Sequence[str]) -> Segmented:
        """Segment with the static part's tokens cached per static text (one tokenizer call saved)."""
        static = self._static_tokens.get(rendered.static)
        if static is None:
            if len(self._static_tokens) >= 256:
                self._static_tokens.pop(next(iter(self._static_tokens)))
            static = self._static_tokens[rendered.static] = self.rt.tokenize(rendered.static)
        return segment(rendered, option_texts, self.rt.tokenize, static)

    def score_prepared(self, prepared: Prepared) -> Scored:
        """Decode the segments and return each option's summed log-probability."""
        seg = prepared.seg
        cached = self._load_prefix(seg)
        first = self.rt.log_softmax_at(-1, [o[0] for o in seg.options])
        logits = first.copy()
        multi = [i for i, o in enumerate(seg.options) if len(o) > 1]
        groups = self._groups(seg, multi) if self.batch_options else [[i] for i in multi]
        for group in groups:
            for i, rest in zip(group, self._decode_branches(seg, group), strict=True):
                logits[i] += rest
        self._keep_static(seg)
        self.stats.decisions += 1
        return Scored(logits=logits, cached_tokens=cached)

    # -- phases ---------------------------------------------------------------------------------

    def _load_prefix(self, seg: Segmented) -> int:
        """Make seq 0 hold the whole shared prefix with the suffix's last logits; return cached count."""
        cached = self._load_static(seg)
        self._decode_run(seg.prefix[seg.static_len :], seg.static_len, logits_last=True)
        self.stats.tokens_computed += len(seg.prefix) - seg.static_len
        return cached

    def _load_static(self, seg: Segmented) -> int:
        """Make seq 0 hold exactly the static segment (reused when identical); return cached count."""
        if self.prefix_cache and self._cached_static == seg.static:
            self.stats.tokens_cached += seg.static_len
            return seg.static_len
        self.rt.clear()
        self._decode_run(seg.prefix[: seg.static_len], 0)
        self.stats.tokens_computed += seg.static_len
        return 0

    def _decode_run(self, tokens: Sequence[int], start: int, *, logits_last: bool = False) -> None:
        """Decode a segment on the prefix sequence, in chunks of n_batch (a canonical split)."""
        step = self.rt.config.n_batch
        for lo in range(0, len(tokens), step):
            chunk = tokens[lo : lo + step]
            last = lo + len(chunk) == len(tokens)
            self.rt.decode(
                [
                    Token(tok, start + lo + k, (PREFIX_SEQ,), logits_last and last and k == len(chunk) - 1)
                    for k, tok in enumerate(chunk)
                ]
            )

    def _groups(self, seg: Segmented, multi: list[int]) -> list[list[int]]:
        """Pack multi-token options (request order) into decode calls bounded by batch, seqs and cells."""
        cfg = self.rt.config
        free_cells = self.rt.n_ctx - len(seg.prefix)
        budget = min(cfg.n_batch, free_cells)
        groups: list[list[int]] = []
        current: list[int] = []
        used = 0
        for i in multi:
            need = len(seg.options[i]) - 1
            if current and (used + need > budget or len(current) >= cfg.n_seq_max - 1):
                groups.append(current)
                current, used = [], 0
            current.append(i)
            used += need
        if current:
            groups.append(current)
        return groups

    def _decode_branches(self, seg: Segmented, group: list[int]) -> list[float]:
        """Decode the options of one group as branches of the prefix; return their tail log-probs."""
        base = len(seg.prefix)
        batch: list[Token] = []
        for slot, i in enumerate(group, start=1):
            self.rt.seq_cp(PREFIX_SEQ, slot)
            batch.extend(
                Token(tok, base + k, (slot,), logits=True) for k, tok in enumerate(seg.options[i][:-1])
            )
        self.rt.decode(batch)
        self.stats.tokens_computed += len(batch)
        tails: list[float] = []
        index = 0
        for i in group:
            option = seg.options[i]
            rows = [
                float(self.rt.log_softmax_at(index + k, [option[k + 1]])[0]) for k in range(len(option) - 1)
            ]
            tails.append(float(np.sum(rows)))
            index += len(option) - 1
        for slot in range(1, len(group) + 1):
            self.rt.seq_rm(slot, -1, -1)
        return tails

    def _keep_static(self, seg: Segmented, longest: int | None = None) -> None:
        """Leave only the static segment in the cache, unless a sliding window could have evicted it."""
        longest = longest or len(seg.prefix) + max(len(o) for o in seg.options)
        if not self.prefix_cache or (self.rt.n_swa and longest >= self.rt.n_swa):
            self.rt.clear()
            self._cached_static = None
            return
        self.rt.seq_rm(PREFIX_SEQ, seg.static_len, -1)
        self._cached_static = seg.static

    def _content_free_logits(self, question: str, texts: list[str]) -> FloatArray:
        """Each option's raw score under an empty state (same question and options), cached."""
        key = (self.identity.sha256, prompt.TEMPLATE_SHA256, question, *texts)
        if key not in self._content_free:
            if len(self._content_free) >= 1024:
                self._content_free.pop(next(iter(self._content_free)))
            self._content_free[key] = self.score_prepared(self.prepare(question, texts, "")).logits
        return self._content_free[key]
