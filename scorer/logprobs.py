"""Log-probabilities of chosen tokens from llama.cpp's logits rows, a call's rows at a time.

A logits row holds one float per vocabulary entry (262,144 for Gemma 3), and a decision reads about ten
(its suffix's last token, then each option token's predecessor): their log-sum-exps cost more than the
decode itself once the decode runs on a GPU. So the rows of a call are reduced together, spread over
the runtime's threads (numpy releases the GIL in these loops; llama.cpp's threads are idle between
calls). Each row is reduced exactly as alone (`log_softmax_row`): which thread takes a row, and what
else is reduced beside it, never changes its bits.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Sequence

FloatArray = np.ndarray[Any, np.dtype[np.float64]]
Row = np.ndarray[Any, np.dtype[np.float32]]

MIN_ROWS_A_THREAD = 4
"""Fewer rows than this a thread are reduced on the caller's thread (a hand-off costs more)."""


def log_softmax_row(row: Row, token_ids: Sequence[int], scratch: Row) -> FloatArray:
    """Log-probabilities of ``token_ids`` under one logits ``row``.

    Reduced in float32 with a max shift, the sum accumulated in float64, in ``scratch`` (a buffer of the
    row's length: no 1 MB temporary a row); only the requested entries are copied out.
    """
    peak = row.max()
    np.subtract(row, peak, out=scratch)
    np.exp(scratch, out=scratch)
    lse = float(peak) + math.log(float(scratch.sum(dtype=np.float64)))
    picked = row[np.asarray(token_ids, dtype=np.int64)].astype(np.float64)
    return picked - lse


class RowReducer:
    """Reduces many rows at once over ``threads`` threads, each with its own scratch buffer."""

    def __init__(self, n_vocab: int, threads: int) -> None:
        self.n_vocab = n_vocab
        self.threads = max(1, threads)
        self._pool = ThreadPoolExecutor(self.threads, "logprobs") if self.threads > 1 else None
        self._local = threading.local()

    def _scratch(self) -> Row:
        scratch: Row | None = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = np.empty(self.n_vocab, dtype=np.float32)
        return scratch

    def _chunk(self, picks: Sequence[tuple[Row, Sequence[int]]]) -> list[FloatArray]:
        scratch = self._scratch()
        return [log_softmax_row(row, ids, scratch) for row, ids in picks]

    def reduce(self, picks: Sequence[tuple[Row, Sequence[int]]]) -> list[FloatArray]:
        """``log_softmax_row`` of each ``(row, token_ids)``, in order."""
        parts = min(self.threads, len(picks) // MIN_ROWS_A_THREAD)
        if self._pool is None or parts < 2:  # one part: no hand-off
            return self._chunk(picks)
        size = -(-len(picks) // parts)
        chunks = [picks[lo : lo + size] for lo in range(0, len(picks), size)]
        return [value for part in self._pool.map(self._chunk, chunks) for value in part]

    def close(self) -> None:
        """Stop the threads (idempotent)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
