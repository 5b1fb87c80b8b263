"""The batch-invariant mode's scoring call: decisions' suffixes and option branches, all in one decode.

Seq 0 holds the static segment (cells from 0). Each decision in the call gets a block of tokens: its
suffix (logits at the last token: every option's first-token log-probability), then each multi-token
option's tokens but the last (logits on each: the next token's log-probability), one after another. The
suffix's tokens belong to the decision's own sequence and to one sequence per branch, so each branch
attends to the static segment, the suffix and its own earlier tokens, computed in the same call.

Each block starts on a cell that is a multiple of 8 (`Layout.start_segment`) and holds its tokens
without gaps, so within it every token lies where it lies when the decision is scored alone: every
attention sum over the KV cells meets the same values in the same SIMD lanes and 8-cell blocks
(`scorer.cells`). The static segment's call ends with pads to a multiple of 8, so a decision scored alone
needs no pad token, in one call where the default mode makes two (suffix, then options); in a shared
call each further block needs up to 7. Calls ask for logits on at least 8 rows (`Layout.placed`). With
the repacked kernels off, the bits are those of the decision alone (`tests/scorer/test_batch_invariance.py`).

A decision whose block does not fit one call (`fits`) is scored alone, suffix and branches in calls of
their own (the engine's other path); that choice depends on the decision and the context sizes only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from scorer.cells import align_up
from scorer.runtime import Token

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scorer.cells import Layout
    from scorer.runtime import LlamaRuntime
    from scorer.segments import Segmented

FloatArray = np.ndarray[Any, np.dtype[np.float64]]
STATIC_SEQ = 0


def block_len(seg: Segmented) -> int:
    """Tokens of a decision's block: its suffix and every multi-token option's tokens but the last."""
    return len(seg.prefix) - seg.static_len + sum(len(o) - 1 for o in seg.options)


def fits(rt: LlamaRuntime, segs: Sequence[Segmented], layout: Layout) -> bool:
    """Whether ``segs`` (one static prefix) can be scored in one call: batch, context and sequences."""
    tokens = sum(layout.align - 1 + block_len(s) for s in segs) + layout.closing
    seqs = sum(1 + sum(1 for o in s.options if len(o) > 1) for s in segs)
    return (
        tokens <= rt.config.n_batch
        and align_up(segs[0].static_len, layout.align) + tokens <= rt.n_ctx
        and seqs + 2 <= rt.config.n_seq_max  # the static's sequence and the pads' (the last one)
    )


def score(rt: LlamaRuntime, segs: Sequence[Segmented], layout: Layout) -> tuple[list[FloatArray], int]:
    """Score ``segs`` in one call; seq 0 holds their static segment. Returns logits, tokens decoded."""
    static_len = segs[0].static_len
    mark = layout.mark()
    batch: list[Token] = []
    rows: list[tuple[int, list[int]]] = []  # per decision: the suffix's last row, each branch's first
    next_seq = STATIC_SEQ + 1
    for seg in segs:
        branches = [o for o in seg.options if len(o) > 1]
        seqs = tuple(range(next_seq, next_seq + 1 + len(branches)))  # the decision's, then its branches'
        next_seq += len(seqs)
        for seq in seqs:
            rt.seq_cp(STATIC_SEQ, seq)
        layout.start_segment(batch)
        suffix = seg.prefix[static_len:]
        batch.extend(Token(t, static_len + k, seqs, k == len(suffix) - 1) for k, t in enumerate(suffix))
        end, starts = len(batch) - 1, list[int]()
        for seq, option in zip(seqs[1:], branches, strict=True):
            starts.append(len(batch))
            base = len(seg.prefix)
            batch.extend(Token(t, base + k, (seq,), logits=True) for k, t in enumerate(option[:-1]))
        rows.append((end, starts))
    layout.placed(batch)
    rt.decode(batch)
    out = _read(rt, segs, rows)
    for seq in range(STATIC_SEQ + 1, next_seq):
        rt.seq_rm(seq, -1, -1)
    layout.rewind(rt, mark)
    return out, len(batch)


def _read(rt: LlamaRuntime, segs: Sequence[Segmented], rows: list[tuple[int, list[int]]]) -> list[FloatArray]:
    """Each decision's option log-likelihoods from the call's rows, every row reduced in one go."""
    picks: list[tuple[int, list[int]]] = []
    for seg, (end, starts) in zip(segs, rows, strict=True):
        picks.append((end, [o[0] for o in seg.options]))
        branches = (o for o in seg.options if len(o) > 1)
        for option, start in zip(branches, starts, strict=True):
            picks.extend((start + k, [option[k + 1]]) for k in range(len(option) - 1))
    values = iter(rt.log_probs(picks))
    out = []
    for seg in segs:
        logits = next(values).copy()
        for i, option in enumerate(seg.options):
            if len(option) > 1:
                logits[i] += sum(float(next(values)[0]) for _ in range(len(option) - 1))
        out.append(logits)
    return out
