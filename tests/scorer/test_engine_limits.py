"""The engine at its documented limits: the sliding window, n_batch, the prefix cache off."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pytest

from scorer.errors import PromptTooLong
from tests.scorer.harness import CASES, STATE, _request, _score, make_engine

if TYPE_CHECKING:
    from pathlib import Path


LONG_STATE = " ".join(f"Message {i}: the customer writes again about the double charge." for i in range(60))


def _logits(response: dict[str, object]) -> np.ndarray:
    options = response["options"]
    assert isinstance(options, list)
    return np.array([o["logit"] for o in options])


@pytest.mark.slow  # four decisions of ~550 tokens on CPU
def test_prefix_cache_past_the_sliding_window_is_not_reused(model_path: Path) -> None:
    """A decision longer than Gemma 3's 512-token window: the next one starts cold, and scores the same.

    The window may have recycled the static prefix's cells, so the cache is cleared (``cached_tokens``
    0) and the warm score equals the cold one within 1e-6.
    """
    engine = make_engine(model_path)
    try:
        assert engine.rt.n_swa == 512
        request = _request(CASES["multi_token"], LONG_STATE)
        cold = _score(engine, request)
        assert cold["prompt"]["prompt_tokens"] > 600
        _score(engine, _request(CASES["multi_token"], LONG_STATE + " Any news?"))
        again = _score(engine, request)
        assert again["prompt"]["cached_tokens"] == 0
        np.testing.assert_allclose(_logits(again), _logits(cold), rtol=0, atol=1e-6)
        short = _request(CASES["multi_token"])
        _score(engine, short)
        assert _score(engine, short)["prompt"]["cached_tokens"] > 0  # under the window it is reused
    finally:
        engine.close()


def test_option_longer_than_n_batch_is_a_prompt_too_long_naming_it(model_path: Path) -> None:
    """An option of more than ``n_batch`` tokens is refused as ``prompt_too_long`` on ``options[i].text``."""
    engine = make_engine(model_path, n_batch=256)
    try:
        long_option = {"id": "long", "text": " ".join(f"word{i}" for i in range(300))}
        with pytest.raises(PromptTooLong) as refused:
            engine.score(_request([{"id": "short", "text": "Billing"}, long_option]))
        assert refused.value.field == "options[1].text"
        assert str(refused.value).startswith("option has ")
        assert str(refused.value).endswith("tokens; at most n_batch=256 are scored")
    finally:
        engine.close()


def test_prefix_cache_off_recomputes_every_decision(model_path: Path) -> None:
    """``SCORER_PREFIX_CACHE=false``: nothing is reused between decisions, and the scores are unchanged."""
    off = make_engine(model_path, prefix_cache=False)
    try:
        request = _request(CASES["multi_token"], STATE)
        first, second = _score(off, request), _score(off, request)
        assert (first["prompt"]["cached_tokens"], second["prompt"]["cached_tokens"]) == (0, 0)
        assert off.stats.tokens_cached == 0
        np.testing.assert_allclose(_logits(second), _logits(first), rtol=0, atol=1e-6)
    finally:
        off.close()
