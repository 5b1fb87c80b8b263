"""Reference and baseline scorers: plain, slow, and independent of the engine's cache and branching.

`reference_logits` (the tests' exactness reference): same canonical segments, no cache, no branching.

For every option it starts from an empty KV cache, decodes the static segment, then the suffix, then
the option's own tokens on the same sequence, and sums the log-probabilities. It shares only the
runtime primitives (decode, log-softmax of one logits row) and the segmentation with the engine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scorer.runtime import LlamaRuntime, Token

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scorer.segments import Segmented


def _decode(rt: LlamaRuntime, tokens: Sequence[int], start: int, *, logits: str) -> None:
    step = rt.config.n_batch
    for lo in range(0, len(tokens), step):
        chunk = tokens[lo : lo + step]
        last_chunk = lo + len(chunk) == len(tokens)
        rt.decode(
            [
                Token(
                    t,
                    start + lo + k,
                    (0,),
                    logits == "all" or (logits == "last" and last_chunk and k == len(chunk) - 1),
                )
                for k, t in enumerate(chunk)
            ]
        )


def reference_logits(rt: LlamaRuntime, seg: Segmented) -> list[float]:
    """Each option's summed log-probability, decoded alone from a cold cache."""
    out: list[float] = []
    base = len(seg.prefix)
    for option in seg.options:
        rt.clear()
        _decode(rt, seg.prefix[: seg.static_len], 0, logits="none")
        _decode(rt, seg.prefix[seg.static_len :], seg.static_len, logits="last")
        total = float(rt.log_softmax_at(-1, [option[0]])[0])
        if len(option) > 1:
            rt.decode([Token(t, base + k, (0,), logits=True) for k, t in enumerate(option[:-1])])
            total += sum(float(rt.log_softmax_at(k, [option[k + 1]])[0]) for k in range(len(option) - 1))
        out.append(total)
    rt.clear()
    return out


def single_call_logits(rt: LlamaRuntime, seg: Segmented) -> list[float]:
    """Each option scored with prompt + option decoded in one call (the runtime's own spread)."""
    out: list[float] = []
    base = len(seg.prefix)
    for option in seg.options:
        rt.clear()
        tokens = list(seg.prefix) + list(option[:-1])
        rt.decode([Token(t, k, (0,), logits=k >= base - 1) for k, t in enumerate(tokens)])
        out.append(sum(float(rt.log_softmax_at(base - 1 + k, [option[k]])[0]) for k in range(len(option))))
    rt.clear()
    return out
