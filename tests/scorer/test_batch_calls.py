"""Batching happens: decisions scored together share ``llama_decode`` calls, counted at the runtime.

A planner that never merged two decisions into one call would pass every equality test; these count
the calls. `DecodeCounter` wraps the engine's real `LlamaRuntime.decode` (the only way a batch reaches
llama.cpp) and records the tokens of each call. The same eight tickets of one decision type are scored
one by one, then eight others together with `Engine.score_many` (what the server's cross-request
batching hands it): in the batch-invariant mode (`scorer.merged`) the eight take one call, where alone
each takes its own; in the default mode (`scorer.crossbatch`) the suffixes share one call and the option
branches a few more, fewer than alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from contracts.semif import ScoreRequest, ScoreResponse
from tests.scorer.harness import ROUTE, TICKETS, make_engine

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from pathlib import Path

    from scorer.engine import Engine
    from scorer.runtime import Token


class DecodeCounter:
    """Stands in for ``rt.decode``: counts each call and its tokens, then runs the real decode."""

    def __init__(self, engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[int] = []
        self._decode = engine.rt.decode
        monkeypatch.setattr(engine.rt, "decode", self)

    def __call__(self, tokens: Sequence[Token]) -> None:
        """Count, then decode."""
        self.calls.append(len(tokens))
        self._decode(tokens)

    def take(self) -> list[int]:
        """The calls since the last `take` (tokens per call)."""
        calls, self.calls = self.calls, []
        return calls


def _requests(tag: str) -> list[ScoreRequest]:
    """The eight tickets as one decision type, made unique by ``tag`` (the engine's memo never answers)."""
    return [ScoreRequest.model_validate({
        "decision_id": f"{tag}-{i}", "decision_type": "route", "state": {"ticket": f"{ticket} ({tag} {i})"},
        "question": "Which team should handle this ticket?",
        "options": [{"id": a, "text": b} for a, b in ROUTE]}) for i, ticket in enumerate(TICKETS)]


@pytest.fixture(params=["invariant", "default"])
def counted(request: pytest.FixtureRequest, model_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Engine, DecodeCounter]]:
    """A fresh engine in each batching mode, its decode calls counted, its static prefix warm."""
    eng = make_engine(model_path, batch_invariant=request.param == "invariant")
    counter = DecodeCounter(eng, monkeypatch)
    eng.score(_requests("warm")[0])  # the static prefix's own call(s), not counted below
    counter.take()
    yield request.param, eng, counter
    eng.close()


def test_decisions_scored_together_share_decode_calls(counted: tuple[str, Engine, DecodeCounter]) -> None:
    """Eight decisions of one type: one call each alone (two in the default mode); together one (two).

    Invariant mode: one call for all eight, holding the tokens of the eight solo calls and their pads.
    Default mode: two calls each alone (its suffix, then its option branches); together one call for
    the eight suffixes and one for all their branches (measured: 16 calls alone, 2 together).
    """
    mode, eng, counter = counted
    solo = []
    for r in _requests("alone"):
        assert isinstance(eng.score(r), ScoreResponse)
        solo.append(counter.take())
    together = eng.score_many(_requests("together"))
    assert all(isinstance(r, ScoreResponse) for r in together), together
    batched = counter.take()
    solo_calls = sum(len(c) for c in solo)
    biggest_solo = max(n for c in solo for n in c)
    if mode == "invariant":
        assert [len(c) for c in solo] == [1] * len(TICKETS), solo
        assert len(batched) == 1, batched
        assert batched[0] >= sum(c[0] for c in solo), (batched, solo)
    else:
        assert [len(c) for c in solo] == [2] * len(TICKETS), solo  # a suffix call, then the branches
        assert len(batched) == 2, batched  # all suffixes, then all branches (80 tokens fit one n_batch)
        assert batched[0] > biggest_solo, (batched, solo)
        assert batched[1] == sum(c[1] for c in solo), (batched, solo)  # the same branches, one call
    assert len(batched) < solo_calls
