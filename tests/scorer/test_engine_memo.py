"""The logit memo (`scorer/memo.py`, ``SCORER_LOGIT_MEMO``): a prompt scored again costs no decode.

The engine tests run the real model; the memo's own bookkeeping (LRU, copies) is tested without one.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from scorer.memo import LogitMemo
from tests.scorer.harness import CASES, STATE, _request, make_engine

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from scorer.engine import Engine


def _logits(response: Any) -> np.ndarray:
    return np.array([o.logit for o in response.options])


@pytest.fixture(scope="module")
def memo_engine(model_path: Path) -> Iterator[Engine]:
    """An engine that keeps the last 8 prompts' raw scores."""
    eng = make_engine(model_path, logit_memo=8)
    yield eng
    eng.close()


def test_a_second_normalization_of_a_prompt_is_not_decoded(memo_engine: Engine, engine: Engine) -> None:
    """``none`` then ``pmi`` on one prompt: the second reuses the raw scores, bit for bit, decoding nothing.

    Its probabilities are those of an engine without the memo within the prefix cache's own 1e-6.
    """
    state = STATE + " (memo: normalizations)"
    first = memo_engine.score(_request(CASES["multi_token"], state, normalization="none"))
    memo_engine.score(_request(CASES["multi_token"], "Hello.", normalization="pmi"))  # its baseline, ahead
    computed, hits = memo_engine.stats.tokens_computed, memo_engine.stats.memo_hits
    second = memo_engine.score(_request(CASES["multi_token"], state, normalization="pmi"))
    assert memo_engine.stats.memo_hits == hits + 1
    assert memo_engine.stats.tokens_computed == computed  # neither the prompt nor its options decoded
    assert second.prompt.cached_tokens == second.prompt.prompt_tokens == first.prompt.prompt_tokens
    assert _logits(second).tobytes() == _logits(first).tobytes()
    fresh = engine.score(_request(CASES["multi_token"], state, normalization="pmi"))  # no memo
    np.testing.assert_allclose(_logits(second), _logits(fresh), rtol=0, atol=1e-6)
    np.testing.assert_allclose([o.probability for o in second.options],
                               [o.probability for o in fresh.options], rtol=0, atol=1e-6)
    assert second.model == fresh.model  # the memo is not part of the identity: it moves no score


def test_off_by_default_every_request_is_decoded(engine: Engine) -> None:
    """``SCORER_LOGIT_MEMO`` unset: the same request twice is decoded twice (the suffix and the options)."""
    request = _request(CASES["multi_token"], STATE + " (memo: off)")
    engine.score(request)
    computed = engine.stats.tokens_computed
    engine.score(request)
    assert engine.memo.size == 0
    assert engine.stats.memo_hits == 0
    assert engine.stats.tokens_computed > computed


def test_a_batch_scores_a_repeated_prompt_once_and_the_next_batch_not_at_all(memo_engine: Engine) -> None:
    """`score_many` with a prompt twice (two candidates' normalizations) and another: two prompts decoded.

    The repeat gets the first's raw scores and call size; a later batch takes both from the memo.
    """
    a, b = STATE + " (memo: batch a)", "The app crashes when I open settings. (memo: batch b)"
    batch = [_request(CASES["shared_first_token"], a, normalization="none"),
             _request(CASES["shared_first_token"], a, normalization="per_token"),
             _request(CASES["shared_first_token"], b, normalization="none")]
    hits = memo_engine.stats.memo_hits
    out = memo_engine.score_many(batch)
    assert memo_engine.stats.memo_hits == hits + 1
    first, twin, other = (r for r in out if not isinstance(r, Exception))
    assert _logits(twin).tobytes() == _logits(first).tobytes()
    assert not np.array_equal(_logits(other), _logits(first))
    assert twin.model.segmentation == first.model.segmentation  # the call that computed it held both
    assert twin.prompt.cached_tokens == twin.prompt.prompt_tokens
    computed = memo_engine.stats.tokens_computed
    again = memo_engine.score_many([batch[2], batch[0]])
    assert memo_engine.stats.tokens_computed == computed
    assert memo_engine.stats.memo_hits == hits + 3
    assert [_logits(r).tobytes() for r in again if not isinstance(r, Exception)] == [
        _logits(other).tobytes(), _logits(first).tobytes()]


def _seg(n: int) -> Any:
    return SimpleNamespace(prefix=(1, 2, n), static_len=2, options=((n,), (n, 7)))


def test_memo_keeps_the_most_recently_used_and_hands_out_copies() -> None:
    """Size 2: the least recently used prompt goes; a caller's edit of a hit never reaches the memo."""
    memo = LogitMemo(2)
    for n in (1, 2):
        memo.put(_seg(n), np.array([float(n), 0.0]), batched=n)
    found = memo.get(_seg(1))  # 1 is now the most recent
    assert found is not None
    found[0][0] = 99.0
    memo.put(_seg(3), np.array([3.0, 0.0]))
    assert memo.get(_seg(2)) is None  # the least recently used went
    kept = memo.get(_seg(1))
    assert kept is not None
    assert (kept[0].tolist(), kept[1]) == ([1.0, 0.0], 1)
    assert len(memo) == 2
    assert memo.hits == 2
    off = LogitMemo(0)
    off.put(_seg(1), np.array([1.0]))
    assert off.get(_seg(1)) is None
    assert len(off) == 0
