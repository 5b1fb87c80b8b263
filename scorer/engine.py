"""The SemIf scoring engine: option log-likelihoods from one shared prefix, with a prefix cache.

Per decision (`Engine.score`):

    prepare   render the prompt, tokenize prompt + option jointly, truncate the state if needed
    prefix    reuse the static segment's KV cells if the previous decision left the same ones,
              else decode it; then decode the per-decision suffix (logits of its last token only)
    options   first tokens read off the suffix's last logits (single-token options cost nothing
              more); longer options are branched as sequences sharing the prefix's cells and decoded
              together (`batch_options`) or one at a time. The batch-invariant mode decodes the suffix
              and the branches in one call (`scorer.merged`)
    respond   normalize, softmax, and pin the prompt and model identity (`scorer.respond`)

Not thread-safe by design: one llama.cpp context, one caller at a time (the server serializes), locked.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from scorer import crossbatch, merged, prompt
from scorer.cells import CELL_ALIGN, Layout, option_groups
from scorer.identity import ModelIdentity, describe
from scorer.memo import LogitMemo
from scorer.model_files import runtime_config
from scorer.prepare import Prepared, Preparer
from scorer.respond import FloatArray, normalize, respond, softmax
from scorer.runtime import LlamaRuntime, Token

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from contracts.semif import ScoreRequest, ScoreResponse
    from scorer.segments import Segmented
    from scorer.settings import ScorerSettings

PREFIX_SEQ = 0  # the sequence that holds the shared prefix (and the cached static segment)
PAD_SEQ_FROM_END = 1  # the batch-invariant mode's pad tokens live in the last sequence (never a branch's)


@dataclass(slots=True)
class EngineStats:
    """Counters for metrics: decisions scored and tokens computed vs reused (prefix cache or memo)."""

    decisions: int = 0
    tokens_computed: int = 0
    tokens_cached: int = 0
    memo_hits: int = 0


@dataclass(frozen=True, slots=True)
class Scored:
    """Raw option log-likelihoods of one prepared decision."""

    logits: FloatArray
    cached_tokens: int


Done = tuple[Prepared, Scored, "FloatArray | None", int]
"""A scored decision of `Engine.score_many`: prepared, raw scores, pmi baseline, decisions in its call."""


class Engine:
    """Scores SemIf requests with one llama.cpp context."""

    def __init__(self, rt: LlamaRuntime, settings: ScorerSettings) -> None:
        self.rt = rt
        self.batch_options = settings.batch_options
        self.prefix_cache = settings.prefix_cache
        self.invariant = settings.batch_invariant
        if self.invariant and rt.config.repack:
            raise ValueError("the batch-invariant mode needs the runtime built with repack=False")
        pad_seq = rt.config.n_seq_max - PAD_SEQ_FROM_END
        self.layout = Layout(CELL_ALIGN if self.invariant else 1, pad_seq=pad_seq)
        options = "options-batched" if self.batch_options else "options-single"
        self.segmentation = "static|suffix+options" if self.invariant else f"static|suffix|{options}"
        self.identity: ModelIdentity = describe(
            rt,
            segmentation=self.segmentation,
            batch_invariant=self.invariant,
            image_digest=settings.image_digest,
            instance_type=settings.instance_type,
        )
        self.stats = EngineStats()
        self._cached_static: tuple[int, ...] | None = None
        self._static_mark = (0, 0)
        self._content_free: dict[tuple[str, ...], FloatArray] = {}
        self.memo = LogitMemo(settings.logit_memo)
        self.preparer = Preparer(rt, self.layout)
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: ScorerSettings) -> Engine:
        """Resolve the model file, load it and build an engine."""
        return cls(LlamaRuntime(runtime_config(settings)), settings)

    def close(self) -> None:
        """Free the llama.cpp model and context."""
        with self._lock:
            self.rt.close()

    @contextmanager
    def exclusive(self) -> Iterator[LlamaRuntime]:
        """Hold the context for something other than scoring (generation): the cache starts cold."""
        with self._lock:
            self.rt.clear()
            self.layout.cleared()
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
            kept = self.memo.get(prepared.seg)  # with the decision count of the call that computed it
            batched = 1 if kept is None else kept[1]
            scored = (self._reused(prepared, kept[0]) if kept is not None
                      else self._remember(prepared, self.score_prepared(prepared), 1))
        timing = {"queue": queue_ms, "score": (time.perf_counter() - started) * 1000}
        return self._respond(request, (prepared, scored, baseline, batched), timing)

    def score_many(
        self, requests: Sequence[ScoreRequest], *, queue_ms: Sequence[float] | None = None
    ) -> list[ScoreResponse | Exception]:
        """Score waiting decisions together: per static prefix, in shared decode calls within the budget.

        Decisions are grouped by static prefix (decision type, first arrival first) and packed in arrival
        order into calls that fit one batch, the sequence limit and the context (`crossbatch.plan`); a
        call of one is the solo path. In the batch-invariant mode every score is the same bits as alone;
        in the default mode a decision's scores move with its batch mates (opt-in there,
        docs/deploy-sagemaker.md). A decision that cannot be scored gets its exception in its place.
        """
        started = time.perf_counter()
        out: list[ScoreResponse | Exception | None] = [None] * len(requests)
        done: dict[int, Done] = {}
        with self._lock:
            prepared: dict[int, Prepared] = {}
            baselines: dict[int, FloatArray | None] = {}
            for k, r in enumerate(requests):
                texts = [o.text for o in r.options]
                try:
                    prepared[k] = self.prepare(r.question, texts, r.state_text())
                    pmi = r.scoring.normalization == "pmi"
                    baselines[k] = self._content_free_logits(r.question, texts) if pmi else None
                except Exception as exc:  # noqa: BLE001  (handed to that caller alone)
                    out[k] = exc
            kept, twins = self.memo.split(prepared)  # answered from the memo; repeats of a prompt here
            for k, (prep, (logits, batched)) in kept.items():
                done[k] = (prep, self._reused(prep, logits), baselines[k], batched)
            self._score_planned(prepared, baselines, done, out)
            for k, (prep, first) in twins.items():  # scored once, with the first
                if first in done:
                    twin = self._reused(prep, done[first][1].logits.copy())
                    done[k] = (prep, twin, baselines[k], done[first][3])
                else:
                    out[k] = out[first]
        elapsed = (time.perf_counter() - started) * 1000
        waits = list(queue_ms) if queue_ms is not None else [0.0] * len(requests)
        for k, one in done.items():
            out[k] = self._respond(requests[k], one, {"queue": waits[k], "score": elapsed})
        return [r for r in out if r is not None]

    def _respond(self, request: ScoreRequest, done: Done, timing: dict[str, float]) -> ScoreResponse:
        """The tail of `score` and `score_many`: normalize, softmax, and the SemIf response."""
        prepared, scored, baseline, batched = done
        texts = [o.text for o in request.options]
        norm = request.scoring.normalization
        scores = normalize(scored.logits, norm, prepared.seg.options, texts, baseline)
        return respond(request, seg=prepared.seg, state_tokens_dropped=prepared.state_tokens_dropped,
                       logits=scored.logits, cached_tokens=scored.cached_tokens, probs=softmax(scores),
                       identity=self.identity, timing=timing, batched=batched)

    def _score_planned(self, prepared: dict[int, Prepared], baselines: dict[int, FloatArray | None],
                       done: dict[int, Done], out: list[ScoreResponse | Exception | None]) -> None:
        """Score ``prepared`` in the calls `crossbatch.plan` packs: into ``done``, or errors into ``out``."""
        fits = merged.fits if self.invariant else crossbatch.fits
        for call in crossbatch.plan(self.rt, self.layout, {k: p.seg for k, p in prepared.items()}, fits):
            try:
                scored = self._score_call([prepared[k] for k in call])
            except Exception as exc:  # noqa: BLE001  (the call's decisions get the error)
                self._cached_static = None  # the cache is in an unknown state: start cold
                for k in call:
                    out[k] = exc
                continue
            for k, one in zip(call, scored, strict=True):
                done[k] = (prepared[k], self._remember(prepared[k], one, len(call)), baselines[k], len(call))

    def _reused(self, prepared: Prepared, logits: FloatArray) -> Scored:
        """Raw scores taken from the memo: every prompt token counts as reused, none is decoded."""
        self.stats.memo_hits += 1
        self.stats.tokens_cached += len(prepared.seg.prefix)
        return Scored(logits=logits, cached_tokens=len(prepared.seg.prefix))

    def _remember(self, prepared: Prepared, scored: Scored, batched: int) -> Scored:
        """Keep freshly computed raw scores in the memo, with the decisions their call held."""
        self.memo.put(prepared.seg, scored.logits, batched)
        return scored

    def _score_call(self, prepared: Sequence[Prepared]) -> list[Scored]:
        """Decisions sharing one static prefix, in shared decode calls (one decision: the solo path)."""
        if len(prepared) == 1:
            return [self.score_prepared(prepared[0])]
        return self._score_shared(prepared)

    def _score_shared(self, prepared: Sequence[Prepared]) -> list[Scored]:
        """Decisions with one static prefix in shared calls: one call in the invariant mode (`merged`)."""
        segs = [p.seg for p in prepared]
        cached = self._load_static(segs[0])
        shared = merged.score if self.invariant else crossbatch.score_branches
        all_logits, computed = shared(self.rt, segs, self.layout)
        self.stats.tokens_computed += computed
        self.stats.decisions += len(segs)
        self._keep_static(segs[0], max(len(s.prefix) + max(map(len, s.options)) for s in segs))
        return [Scored(logits=logits, cached_tokens=cached) for logits in all_logits]

    def prepare(self, question: str, option_texts: Sequence[str], state: str) -> Prepared:
        """Render, tokenize and segment a decision; cut the state's tail to fit (`scorer.prepare`)."""
        return self.preparer.prepare(question, option_texts, state)

    def score_prepared(self, prepared: Prepared) -> Scored:
        """Decode the segments and return each option's summed log-probability."""
        seg = prepared.seg
        if self.invariant and merged.fits(self.rt, [seg], self.layout):
            return self._score_shared([prepared])[0]
        cached, last = self._load_prefix(seg)
        first = self.rt.log_softmax_at(last, [o[0] for o in seg.options])
        logits = first.copy()
        multi = [i for i, o in enumerate(seg.options) if len(o) > 1]
        groups = option_groups(self.rt, self.layout, seg, multi, together=self.batch_options)
        for group in groups:
            for i, rest in zip(group, self._decode_branches(seg, group), strict=True):
                logits[i] += rest
        self._keep_static(seg)
        self.stats.decisions += 1
        return Scored(logits=logits, cached_tokens=cached)

    # -- phases ---------------------------------------------------------------------------------

    def _load_prefix(self, seg: Segmented) -> tuple[int, int]:
        """Make seq 0 hold the whole shared prefix; return the cached count and the last token's index."""
        cached = self._load_static(seg)
        last = self._decode_run(seg.prefix[seg.static_len :], seg.static_len, logits_last=True)
        self.stats.tokens_computed += len(seg.prefix) - seg.static_len
        return cached, last

    def _load_static(self, seg: Segmented) -> int:
        """Make seq 0 hold exactly the static segment (reused when identical); return cached count."""
        if self.prefix_cache and self._cached_static == seg.static:
            self.stats.tokens_cached += seg.static_len
            return seg.static_len
        self.rt.clear()
        self.layout.cleared()
        self._decode_run(seg.prefix[: seg.static_len], 0)
        self._static_mark = self.layout.mark()
        self.stats.tokens_computed += seg.static_len
        return 0

    def _decode_run(self, tokens: Sequence[int], start: int, *, logits_last: bool = False) -> int:
        """Decode a segment on the prefix sequence, in chunks of n_batch (a canonical split).

        The segment starts on an aligned cell in the batch-invariant mode (pads first, in the first chunk).
        """
        step = self.rt.config.n_batch
        lo = index = 0
        while lo < len(tokens):
            batch: list[Token] = []
            if lo == 0:
                self.layout.start_segment(batch)
            chunk = tokens[lo : lo + step - len(batch) - self.layout.closing]
            last = lo + len(chunk) == len(tokens)
            batch.extend(
                Token(tok, start + lo + k, (PREFIX_SEQ,), logits_last and last and k == len(chunk) - 1)
                for k, tok in enumerate(chunk)
            )
            index = len(batch) - 1
            if last and not logits_last:  # the static segment: the next one starts on an aligned cell
                self.layout.start_segment(batch)
            self.layout.placed(batch, compared=logits_last)
            self.rt.decode(batch)
            lo += len(chunk)
        return index  # the batch index of the segment's last token, in the last call

    def _decode_branches(self, seg: Segmented, group: list[int]) -> list[float]:
        """Decode the options of one group as branches of the prefix; return their tail log-probs."""
        base = len(seg.prefix)
        mark = self.layout.mark()
        batch: list[Token] = []
        starts: list[int] = []
        for slot, i in enumerate(group, start=1):
            self.rt.seq_cp(PREFIX_SEQ, slot)
            self.layout.start_segment(batch)
            starts.append(len(batch))
            batch.extend(
                Token(tok, base + k, (slot,), logits=True) for k, tok in enumerate(seg.options[i][:-1])
            )
        self.layout.placed(batch)
        self.rt.decode(batch)
        self.stats.tokens_computed += len(batch)
        picks = [(index + k, [seg.options[i][k + 1]])
                 for i, index in zip(group, starts, strict=True) for k in range(len(seg.options[i]) - 1)]
        values = iter(self.rt.log_probs(picks))  # every row of the call reduced in one go
        tails = [float(np.sum([float(next(values)[0]) for _ in seg.options[i][1:]])) for i in group]
        for slot in range(1, len(group) + 1):
            self.rt.seq_rm(slot, -1, -1)
        self.layout.rewind(self.rt, mark)
        return tails

    def _keep_static(self, seg: Segmented, longest: int | None = None) -> None:
        """Leave only the static segment in the cache, unless a sliding window could have evicted it."""
        longest = longest or len(seg.prefix) + max(len(o) for o in seg.options)
        if not self.prefix_cache or (self.rt.n_swa and longest >= self.rt.n_swa):
            self.rt.clear()
            self.layout.cleared()
            self._cached_static = None
            return
        self.rt.seq_rm(PREFIX_SEQ, seg.static_len, -1)
        self.layout.rewind(self.rt, self._static_mark)
        self._cached_static = seg.static

    def _content_free_logits(self, question: str, texts: list[str]) -> FloatArray:
        """Each option's raw score under an empty state (same question and options), cached."""
        key = (self.identity.sha256, prompt.TEMPLATE_SHA256, question, *texts)
        if key not in self._content_free:
            if len(self._content_free) >= 1024:
                self._content_free.pop(next(iter(self._content_free)))
            self._content_free[key] = self.score_prepared(self.prepare(question, texts, "")).logits
        return self._content_free[key]
