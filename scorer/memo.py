"""The raw option scores of recently scored prompts, so that a prompt scored again costs no decode.

Two candidates that share a model and differ only in normalization (the demo's ``pmi`` and ``none``),
and a retried call, send the engine the same tokens twice. The raw per-option log-likelihoods depend
only on those tokens (the prompt's canonical segments and each option's tail), so the engine keeps the
last ``size`` of them, keyed by exactly those tokens, with how many decisions shared the call that computed
them (a response says so in ``model.segmentation``), and normalizes a hit as it would a fresh score.

A hit returns the bits of the first computation. A fresh computation of the same prompt equals it within
the prefix cache's tolerance (1e-6, cold against warm), or within the cross-request batching tolerance
when batch mates differ; so the memo is off by default (``SCORER_LOGIT_MEMO=0``) and turned on where
that is wanted: the demo turns it on (``docs/scorer.md``).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scorer.prepare import Prepared
    from scorer.respond import FloatArray
    from scorer.segments import Segmented

    Key = tuple[tuple[int, ...], int, tuple[tuple[int, ...], ...]]


def memo_key(seg: Segmented) -> Key:
    """What the raw scores depend on: the shared prefix, where the static segment ends, each option's tail."""
    return (seg.prefix, seg.static_len, seg.options)


class LogitMemo:
    """Least recently used raw scores, at most ``size`` prompts (0: nothing is kept)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.hits = 0
        self._entries: OrderedDict[Key, tuple[FloatArray, int]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, seg: Segmented) -> tuple[FloatArray, int] | None:
        """A copy of the prompt's raw scores and its call's decision count if kept (a hit), else None."""
        if not self.size:
            return None
        key = memo_key(seg)
        found = self._entries.get(key)
        if found is None:
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return found[0].copy(), found[1]

    def put(self, seg: Segmented, logits: FloatArray, batched: int = 1) -> None:
        """Keep the prompt's raw scores (a copy) and the decisions its call held (LRU beyond ``size``)."""
        if not self.size:
            return
        key = memo_key(seg)
        self._entries[key] = (logits.copy(), batched)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def split(
        self, prepared: dict[int, Prepared]
    ) -> tuple[dict[int, tuple[Prepared, tuple[FloatArray, int]]], dict[int, tuple[Prepared, int]]]:
        """Take out of ``prepared`` the prompts kept here, and the repeats of a prompt it holds twice.

        Returns ``{k: (prepared, what get returns)}`` and ``{k: (prepared, the first k of that prompt)}``;
        what is left is to be scored once each. With ``size`` 0 nothing is taken out.
        """
        kept: dict[int, tuple[Prepared, tuple[FloatArray, int]]] = {}
        twins: dict[int, tuple[Prepared, int]] = {}
        if not self.size:
            return kept, twins
        firsts: dict[Key, int] = {}
        for k in list(prepared):
            if (found := self.get(prepared[k].seg)) is not None:
                kept[k] = (prepared.pop(k), found)
            elif (first := firsts.setdefault(memo_key(prepared[k].seg), k)) != k:
                twins[k] = (prepared.pop(k), first)
        return kept, twins
