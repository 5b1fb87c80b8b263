"""Preparing a decision: render the prompt, tokenize and segment it, cut the state's tail if it does not fit.

`Preparer` is the engine's first phase (`scorer.engine`). It reads the runtime (tokenizer, batch and
context sizes) and the cell layout (the batch-invariant mode's pads count against the context), and
caches each decision type's static tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scorer import prompt
from scorer.errors import PromptTooLong
from scorer.segments import Segmented, segment

if TYPE_CHECKING:
    from collections.abc import Sequence

    from scorer.cells import Layout
    from scorer.runtime import LlamaRuntime


@dataclass(frozen=True, slots=True)
class Prepared:
    """A decision ready to decode: its segments and how its state was cut to fit."""

    seg: Segmented
    state_tokens_dropped: int


class Preparer:
    """Turns a question, options and state into a `Prepared` decision for one runtime."""

    def __init__(self, rt: LlamaRuntime, layout: Layout) -> None:
        self.rt = rt
        self.layout = layout
        self._static_tokens: dict[str, list[int]] = {}

    def prepare(self, question: str, option_texts: Sequence[str], state: str) -> Prepared:
        """Render, tokenize and segment a decision; cut the state's tail if it does not fit."""
        seg = self._segment(prompt.render(question, option_texts, state), option_texts)
        for i, option in enumerate(seg.options):
            if len(option) > self.rt.config.n_batch:
                raise PromptTooLong(
                    f"option has {len(option)} tokens; at most n_batch={self.rt.config.n_batch} are scored",
                    field=f"options[{i}].text",
                )
        if self._cells_needed(seg) <= self.rt.n_ctx:
            return Prepared(seg, 0)
        bare = self._segment(prompt.render(question, option_texts, ""), option_texts)
        if self._cells_needed(bare) > self.rt.n_ctx:
            raise PromptTooLong(
                f"question and options need {self._cells_needed(bare)} tokens; the context holds "
                f"{self.rt.n_ctx}",
                field="options",
            )
        state_tokens = self.rt.tokenize(state, add_special=False)
        keep = len(state_tokens) - (self._cells_needed(seg) - self.rt.n_ctx)
        while True:
            keep = max(0, keep)
            text = self.rt.detokenize(state_tokens[:keep])
            seg = self._segment(prompt.render(question, option_texts, text), option_texts)
            excess = self._cells_needed(seg) - self.rt.n_ctx
            if excess <= 0 or keep == 0:
                return Prepared(seg, len(state_tokens) - keep)
            keep -= excess

    def _cells_needed(self, seg: Segmented) -> int:
        """KV cells to score ``seg`` alone, its longest option included (pads too in the invariant mode)."""
        longest = max(len(o) for o in seg.options) - 1
        return self.layout.cells_for(seg.static_len, len(seg.prefix) - seg.static_len, longest)

    def _segment(self, rendered: prompt.RenderedPrompt, option_texts: Sequence[str]) -> Segmented:
        """Segment with the static part's tokens cached per static text (one tokenizer call saved)."""
        static = self._static_tokens.get(rendered.static)
        if static is None:
            if len(self._static_tokens) >= 256:
                self._static_tokens.pop(next(iter(self._static_tokens)))
            static = self._static_tokens[rendered.static] = self.rt.tokenize(rendered.static)
        return segment(rendered, option_texts, self.rt.tokenize, static)

