"""The catalog made live: per decision type, its state rules, limits, backend and breaker."""

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
    from contracts.catalog import Catalog, DecisionType
    from scorer.settings import ScorerSettings
    from shadow.backends.base import Backend


@dataclass(slots=True)
class DecisionRuntime:
    """Everything the sidecar needs at run time for one decision type."""

    name: str
    dtype: DecisionType
    rules: StateRules
    backend: Backend
    breaker: CircuitBreaker
    guard: SpendGuard
    rate_cap: RateCap | None
    token: str | None

    @property
    def options(self) -> list[dict[str, str]]:
        """The declared options as SemIf wants them."""
        return [{"id": o.id, "text": o.text} for o in self.dtype.options]


@dataclass(slots=True)
class Runtimes:
    """All decision types, the distinct backends they share, and their breakers."""

    types: dict[str, DecisionRuntime]
    backends: list[Backend]


def build_runtimes(catalog: Catalog, redaction_key: bytes | None,
                   scorer_settings: ScorerSettings | None = None) -> Runtimes:
    """One runtime per decision type; types with the same scorer share one backend and one breaker."""
    backends: dict[object, tuple[Backend, CircuitBreaker]] = {}
    types: dict[str, DecisionRuntime] = {}
    for name, dtype in catalog.decision_types.items():
        key = backend_key(dtype.scorer)
        if key not in backends:
            breaker = CircuitBreaker(dtype.breaker.failure_threshold, dtype.breaker.reset_after_s)
            backends[key] = (make_backend(dtype.scorer, scorer_settings), breaker)
        backend, breaker = backends[key]
        token = os.environ.get(dtype.auth_token_env) if dtype.auth_token_env else None
        if dtype.auth_token_env and not token:
            raise CatalogError(f"decision_types.{name}.auth_token_env: {dtype.auth_token_env} is not set")
        cap = dtype.sampling.max_per_second
        if dtype.state.hash and not redaction_key:
            raise CatalogError(f"decision_types.{name}.state.hash: needs SHADOW_REDACTION_KEY")
        types[name] = DecisionRuntime(
            name=name, dtype=dtype, rules=StateRules(dtype.state, redaction_key), backend=backend,
            breaker=breaker, guard=SpendGuard(dtype.budget.calls_per_hour, dtype.budget.tokens_per_hour),
            rate_cap=RateCap(cap) if cap else None, token=token)
    return Runtimes(types=types, backends=[b for b, _ in backends.values()])
