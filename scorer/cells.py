"""Where a decode's tokens land in the KV cache, and the padding that makes a score batch-invariant.

llama.cpp puts a decode's tokens into the cache's free cells in batch order, starting at the lowest free
cell. Attention then sums each token's terms over all cells (masked ones are exact zeros) in SIMD lanes
by cell index modulo 8 (`ggml_vec_dot_f32`, tinyBLAS): a segment whose cells sit at another offset
modulo 8 puts the same terms in other lanes, and the sum changes in its last bits, which a 270M model
amplifies to ~1 nat (docs/performance.md, "Cross-request batching"). So a decision's logits depended on
what shared its decode calls.

The softmax over those cells sums them in blocks of 8 cells (a float sum per block, then a double sum
over blocks: `ggml_vec_soft_max_f32`'s AVX2 code), so a block must also hold the same visible cells alone
and in a batch: keeping each cell's residue is not enough (read in the code, not measured apart), the
block boundaries must fall at the same places among the decision's own cells.

`Layout` with ``align`` 8 starts segments on a cell that is a multiple of 8 (`start_segment`: throwaway
pad tokens in sequence ``pad_seq`` before it): the end of the static segment, and each decision's block
of tokens in a call (`scorer.merged`; within a block the decision's own tokens lie the same way alone
and in a batch). Every call whose rows are compared across batches asks for logits on at least
`MIN_OUTPUTS` rows (`Layout.placed`). With the repacked weight kernels off (their arithmetic depends on
the call's token count), a token's arithmetic then no longer depends on its batch mates: alone or
beside 15 other decisions, the same bits. ``align`` 1 places tokens as they fall (no padding: the
default mode's layout).

It relies on llama.cpp placing a call's tokens in order from the lowest free cell when every cell above
is free, which the engine keeps true: cells are only ever freed from a `mark` to the end (`rewind`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scorer.runtime import Token

if TYPE_CHECKING:
    from scorer.runtime import LlamaRuntime
    from scorer.segments import Segmented

CELL_ALIGN = 8
"""The SIMD lane count of the CPU kernels' sums over KV cells (AVX2: 8 floats)."""
MIN_OUTPUTS = 8
"""Rows with logits in every call of the batch-invariant mode (see `Layout.placed`)."""


def align_up(n: int, align: int) -> int:
    """``n`` rounded up to a multiple of ``align``."""
    return -(-n // align) * align


@dataclass(slots=True)
class Layout:
    """Tracks the next free cell; pads segment starts to multiples of ``align`` (1: no padding)."""

    align: int
    pad_seq: int
    pad_token: int = 0
    min_outputs: int = MIN_OUTPUTS
    """Rows with logits in every compared call when ``align`` > 1 (0: no pad rows, for measurements)."""
    used: int = 0
    """Cells in use: the next decode's first token lands on this cell."""
    pad_pos: int = 0
    """The next position in the pad sequence (llama.cpp wants each sequence's positions consecutive)."""

    def start_segment(self, batch: list[Token]) -> None:
        """Append pad tokens to ``batch`` so the next token appended lands on an aligned cell."""
        n = -(self.used + len(batch)) % self.align
        if n:
            pads = range(self.pad_pos, self.pad_pos + n)
            batch.extend(Token(self.pad_token, pos, (self.pad_seq,), logits=False) for pos in pads)
            self.pad_pos += n

    def placed(self, batch: list[Token], *, compared: bool = True) -> None:
        """``batch`` is about to be decoded: close it; its tokens will hold the next cells.

        With ``align`` > 1 a call asks for logits on at least `MIN_OUTPUTS` rows (pads whose logits nobody
        reads): the last layer and the output projection run only on the rows that want logits, and the
        CPU matrix products take another kernel from 8 rows on, so one decision's row scored alone (1 row)
        and beside 7 others (8 rows) came out 1.6e-3 nats apart. Above the threshold every row meets the
        same kernel. A call that never shares its rows with another decision (the static segment's, which
        asks for no logits and is always decoded alone from cell 0) is not ``compared``: no pad rows.
        """
        if self.align > 1 and compared:
            missing = self.min_outputs - sum(1 for t in batch if t.logits)
            if missing > 0:
                pads = range(self.pad_pos, self.pad_pos + missing)
                batch.extend(Token(self.pad_token, pos, (self.pad_seq,), logits=True) for pos in pads)
                self.pad_pos += missing
        self.used += len(batch)

    def mark(self) -> tuple[int, int]:
        """The current end of the used cells, for `rewind`."""
        return self.used, self.pad_pos

    def rewind(self, rt: LlamaRuntime, mark: tuple[int, int]) -> None:
        """Free the pads placed since ``mark`` (the caller frees its own sequences' cells there too)."""
        used, pad_pos = mark
        if self.pad_pos > pad_pos:
            rt.seq_rm(self.pad_seq, pad_pos, -1)
        self.used, self.pad_pos = used, pad_pos

    def cleared(self) -> None:
        """The runtime's cache was cleared: no cell is held, pads included."""
        self.used, self.pad_pos = 0, 0

    @property
    def closing(self) -> int:
        """The most pad tokens `placed` adds at the end of a call."""
        return 0 if self.align == 1 else self.min_outputs

    def cells_for(self, static_len: int, suffix_len: int, longest_branch: int) -> int:
        """Cells a decision needs alone: its static segment, suffix and longest branch, each aligned."""
        suffix_end = align_up(static_len, self.align) + suffix_len
        return align_up(suffix_end, self.align) + longest_branch + self.closing


def option_groups(
    rt: LlamaRuntime, layout: Layout, seg: Segmented, multi: list[int], *, together: bool = True
) -> list[list[int]]:
    """Pack multi-token options (request order) into decode calls bounded by batch, seqs and cells.

    ``together`` False (``SCORER_BATCH_OPTIONS=false``): one option per call.
    """
    if not together:
        return [[i] for i in multi]
    cfg = rt.config
    free_cells = rt.n_ctx - layout.used
    pads = layout.align - 1  # at most, before each branch
    budget = min(cfg.n_batch, free_cells) - layout.closing
    max_branches = cfg.n_seq_max - 2  # sequence 0 holds the prefix, the last one the pads
    groups: list[list[int]] = []
    current: list[int] = []
    used = 0
    for i in multi:
        need = len(seg.options[i]) - 1 + pads
        if current and (used + need > budget or len(current) >= max_branches):
            groups.append(current)
            current, used = [], 0
        current.append(i)
        used += need
    if current:
        groups.append(current)
    return groups
