"""Cross-request batching: several decisions with one static prefix scored in shared decode calls.

Seq 0 holds the static segment. Decision j gets sequence 1 + j, sharing the static cells; all the
suffixes go in one decode (logits at each suffix's end); then every multi-token option of every
decision is branched from its decision's sequence and decoded in as few calls as the batch and
sequence limits allow. Afterwards only seq 0's static cells remain.

In the default mode batch shapes differ from scoring the decisions one by one, so llama.cpp's CPU
kernels give slightly different numbers and a decision's scores depend on its batch mates: cross-request
batching is opt-in there (`SCORER_CROSS_BATCH`). In the batch-invariant mode (`SCORER_BATCH_INVARIANT`:
repacked kernels off, every segment on an aligned cell, `scorer.cells`) the scores are the same bits as
alone, and it is on by default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from scorer.runtime import Token

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from scorer.cells import Layout
    from scorer.runtime import LlamaRuntime
    from scorer.segments import Segmented

FloatArray = np.ndarray[Any, np.dtype[np.float64]]


def fits(rt: LlamaRuntime, segs: Sequence[Segmented], layout: Layout) -> bool:
    """Whether decisions sharing one static prefix can be scored in shared calls (batch, seqs, cells)."""
    pads = layout.align - 1  # at most, before each segment
    suffix_tokens = sum(len(s.prefix) - s.static_len + pads for s in segs) + layout.closing
    branch_tokens = sum(len(o) - 1 + pads for s in segs for o in s.options if len(o) > 1)
    return (
        suffix_tokens <= rt.config.n_batch
        and segs[0].static_len + pads + suffix_tokens + branch_tokens <= rt.n_ctx
        and len(segs) + 2 <= rt.config.n_seq_max  # the prefix's sequence and the pads' (the last one)
    )


def plan(
    rt: LlamaRuntime,
    layout: Layout,
    segs: dict[int, Segmented],
    fits: Callable[[LlamaRuntime, Sequence[Segmented], Layout], bool] = fits,
) -> list[list[int]]:
    """The calls for ``segs`` (by key): grouped by static prefix, first come first, packed while they fit.

    ``fits`` says whether decisions can share calls: this module's `fits`, or `scorer.merged.fits`.
    """
    groups: dict[tuple[int, ...], list[int]] = {}
    for key, seg in segs.items():
        groups.setdefault(seg.static, []).append(key)
    calls: list[list[int]] = []
    for keys in groups.values():
        current: list[int] = []
        for key in keys:
            if current and not fits(rt, [segs[k] for k in [*current, key]], layout):
                calls.append(current)
                current = []
            current.append(key)
        calls.append(current)
    return calls


def score_branches(
    rt: LlamaRuntime, segs: Sequence[Segmented], layout: Layout
) -> tuple[list[FloatArray], int]:
    """Score every decision's options; seq 0 must hold the static segment. Returns logits, tokens decoded."""
    static_len = segs[0].static_len
    batch: list[Token] = []
    ends: list[int] = []
    for j, seg in enumerate(segs, start=1):
        rt.seq_cp(0, j)
        layout.start_segment(batch)
        batch.extend(
            Token(t, static_len + k, (j,), k == len(seg.prefix) - static_len - 1)
            for k, t in enumerate(seg.prefix[static_len:])
        )
        ends.append(len(batch) - 1)
    layout.placed(batch)
    rt.decode(batch)
    computed = len(batch)
    firsts = rt.log_probs([(end, [o[0] for o in seg.options]) for end, seg in zip(ends, segs, strict=True)])
    logits = [first.copy() for first in firsts]
    branches = [(j, i) for j, seg in enumerate(segs) for i, o in enumerate(seg.options) if len(o) > 1]
    free_seqs = rt.config.n_seq_max - len(segs) - 2
    step = rt.config.n_batch
    pads = layout.align - 1
    while branches:
        group: list[tuple[int, int]] = []
        used = 0
        while (
            branches
            and len(group) < free_seqs
            and used + len(segs[branches[0][0]].options[branches[0][1]]) - 1 + pads <= step - layout.closing
        ):
            j, i = branches.pop(0)
            group.append((j, i))
            used += len(segs[j].options[i]) - 1 + pads
        computed += _decode_group(rt, segs, group, logits, first_seq=len(segs) + 1, layout=layout)
    for seq in range(1, len(segs) + 1):
        rt.seq_rm(seq, -1, -1)
    return logits, computed


def _decode_group(  # noqa: PLR0913  (one call's whole state; keyword-only where it could be confused)
    rt: LlamaRuntime,
    segs: Sequence[Segmented],
    group: list[tuple[int, int]],
    logits: list[FloatArray],
    *,
    first_seq: int,
    layout: Layout,
) -> int:
    mark = layout.mark()
    batch: list[Token] = []
    starts: list[int] = []
    for slot, (j, i) in enumerate(group, start=first_seq):
        rt.seq_cp(j + 1, slot)
        base = len(segs[j].prefix)
        layout.start_segment(batch)
        starts.append(len(batch))
        batch.extend(Token(t, base + k, (slot,), logits=True) for k, t in enumerate(segs[j].options[i][:-1]))
    layout.placed(batch)
    rt.decode(batch)
    picks = [(index + k, [segs[j].options[i][k + 1]])
             for (j, i), index in zip(group, starts, strict=True) for k in range(len(segs[j].options[i]) - 1)]
    values = iter(rt.log_probs(picks))
    for j, i in group:
        for _ in range(len(segs[j].options[i]) - 1):
            logits[j][i] += float(next(values)[0])
    for slot in range(first_seq, first_seq + len(group)):
        rt.seq_rm(slot, -1, -1)
    layout.rewind(rt, mark)
    return len(batch)
