"""Cross-request batching: several decisions with one static prefix scored in shared decode calls.

Seq 0 holds the static segment. Decision j gets sequence 1 + j, sharing the static cells; all the
suffixes go in one decode (logits at each suffix's end); then every multi-token option of every
decision is branched from its decision's sequence and decoded in as few calls as the batch and
sequence limits allow. Afterwards only seq 0's static cells remain.

Batch shapes differ from scoring the decisions one by one, so llama.cpp's CPU kernels give slightly
different numbers, and a decision's scores depend on its batch mates: this is why it is opt-in
(`SCORER_CROSS_BATCH`) and why the server benchmark reports the deviation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from scorer.runtime import Token

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scorer.runtime import LlamaRuntime
    from scorer.segments import Segmented

FloatArray = np.ndarray[Any, np.dtype[np.float64]]


def check_fits(rt: LlamaRuntime, segs: Sequence[Segmented]) -> None:
    """Raise ValueError unless the decisions share a static prefix and fit one context together."""
    if len({s.static for s in segs}) != 1:
        raise ValueError("decisions do not share a static prefix")
    suffix_tokens = sum(len(s.prefix) - s.static_len for s in segs)
    branch_tokens = sum(len(o) - 1 for s in segs for o in s.options if len(o) > 1)
    if suffix_tokens > rt.config.n_batch:
        raise ValueError("suffixes exceed one batch")
    if segs[0].static_len + suffix_tokens + branch_tokens > rt.n_ctx:
        raise ValueError("decisions do not fit the context together")
    if len(segs) + 1 > rt.config.n_seq_max:
        raise ValueError("too many decisions for the sequence limit")


def score_branches(rt: LlamaRuntime, segs: Sequence[Segmented]) -> tuple[list[FloatArray], int]:
    """Score every decision's options; seq 0 must hold the static segment. Returns logits, tokens decoded."""
    static_len = segs[0].static_len
    batch: list[Token] = []
    ends: list[int] = []
    for j, seg in enumerate(segs, start=1):
        rt.seq_cp(0, j)
        batch.extend(
            Token(t, static_len + k, (j,), k == len(seg.prefix) - static_len - 1)
            for k, t in enumerate(seg.prefix[static_len:])
        )
        ends.append(len(batch) - 1)
    rt.decode(batch)
    computed = len(batch)
    logits = [
        rt.log_softmax_at(end, [o[0] for o in seg.options]).copy()
        for end, seg in zip(ends, segs, strict=True)
    ]
    branches = [(j, i) for j, seg in enumerate(segs) for i, o in enumerate(seg.options) if len(o) > 1]
    free_seqs = rt.config.n_seq_max - len(segs) - 1
    step = rt.config.n_batch
    while branches:
        group: list[tuple[int, int]] = []
        used = 0
        while (
            branches
            and len(group) < free_seqs
            and used + len(segs[branches[0][0]].options[branches[0][1]]) - 1 <= step
        ):
            j, i = branches.pop(0)
            group.append((j, i))
            used += len(segs[j].options[i]) - 1
        computed += _decode_group(rt, segs, group, logits, first_seq=len(segs) + 1)
    for seq in range(1, len(segs) + 1):
        rt.seq_rm(seq, -1, -1)
    return logits, computed


def _decode_group(
    rt: LlamaRuntime,
    segs: Sequence[Segmented],
    group: list[tuple[int, int]],
    logits: list[FloatArray],
    first_seq: int,
) -> int:
    batch: list[Token] = []
    for slot, (j, i) in enumerate(group, start=first_seq):
        rt.seq_cp(j + 1, slot)
        base = len(segs[j].prefix)
        batch.extend(Token(t, base + k, (slot,), logits=True) for k, t in enumerate(segs[j].options[i][:-1]))
    rt.decode(batch)
    index = 0
    for j, i in group:
        option = segs[j].options[i]
        for k in range(len(option) - 1):
            logits[j][i] += float(rt.log_softmax_at(index + k, [option[k + 1]])[0])
        index += len(option) - 1
    for slot in range(first_seq, first_seq + len(group)):
        rt.seq_rm(slot, -1, -1)
    return len(batch)
