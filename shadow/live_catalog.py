"""The catalog made live: per decision type, its state rules, rate cap and candidates.

Each candidate (the champion, then the challengers) has its own client, breaker and spend guard: a
challenger that fails, stalls or spends never opens the champion's breaker or uses its budget. The
same candidate name in several types shares one client and one breaker per endpoint, as one scorer
serving several types does.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shadow.backends.factory import backend_key, make_backend
from shadow.breaker import CircuitBreaker
from shadow.errors import CatalogError
from shadow.sampling import RateCap, SpendGuard
from shadow.state import StateRules

if TYPE_CHECKING:
    from contracts.catalog import Catalog, DecisionType, Scorer
    from scorer.settings import ScorerSettings
    from shadow.backends.base import Backend


@dataclass(slots=True)
class CandidateRuntime:
    """One candidate of one decision type: its scorer block, client, breaker and spend guard."""

    name: str
    spec: Scorer
    backend: Backend
    breaker: CircuitBreaker
    guard: SpendGuard


@dataclass(slots=True)
class DecisionRuntime:
    """Everything the sidecar needs at run time for one decision type."""

    name: str
    dtype: DecisionType
    rules: StateRules
    candidates: list[CandidateRuntime]  # the champion first
    rate_cap: RateCap | None
    token: str | None

    @property
    def options(self) -> list[dict[str, str]]:
        """The declared options as SemIf wants them."""
        return [{"id": o.id, "text": o.text} for o in self.dtype.options]


@dataclass(slots=True)
class Runtimes:
    """All decision types, the distinct backends their candidates use, and the candidate names."""

    types: dict[str, DecisionRuntime]
    backends: list[Backend]
    lanes: list[str]


def build_runtimes(catalog: Catalog, redaction_key: bytes | None,
                   scorer_settings: ScorerSettings | None = None) -> Runtimes:
    """One runtime per decision type, one client and breaker per (candidate name, scorer)."""
    backends: dict[object, tuple[Backend, CircuitBreaker]] = {}
    types: dict[str, DecisionRuntime] = {}
    lanes: dict[str, None] = {}
    for name, dtype in catalog.decision_types.items():
        token = os.environ.get(dtype.auth_token_env) if dtype.auth_token_env else None
        if dtype.auth_token_env and not token:
            raise CatalogError(f"decision_types.{name}.auth_token_env: {dtype.auth_token_env} is not set")
        if dtype.state.hash and not redaction_key:
            raise CatalogError(f"decision_types.{name}.state.hash: needs SHADOW_REDACTION_KEY")
        candidates = []
        for cand, spec in dtype.scorers.items():
            key = (cand, backend_key(spec))
            if key not in backends:
                breaker = CircuitBreaker(dtype.breaker.failure_threshold, dtype.breaker.reset_after_s)
                backends[key] = (make_backend(spec, scorer_settings), breaker)
            backend, breaker = backends[key]
            guard = SpendGuard(dtype.budget.calls_per_hour, dtype.budget.tokens_per_hour)
            candidates.append(CandidateRuntime(cand, spec, backend, breaker, guard))
            lanes[cand] = None
        cap = dtype.sampling.max_per_second
        types[name] = DecisionRuntime(
            name=name, dtype=dtype, rules=StateRules(dtype.state, redaction_key), candidates=candidates,
            rate_cap=RateCap(cap) if cap else None, token=token)
    return Runtimes(types=types, backends=[b for b, _ in backends.values()], lanes=list(lanes))
