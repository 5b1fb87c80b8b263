"""Build one backend per distinct scorer in the catalog (types that share a scorer share its client)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scorer.settings import ScorerSettings
    from shadow.backends.base import Backend
    from shadow.catalog import Scorer

BackendKey = tuple[str, str, str | None, str, str | None]


def backend_key(scorer: Scorer) -> BackendKey:
    """What makes two catalog scorers the same client."""
    return (scorer.backend, scorer.endpoint, scorer.endpoint_url, scorer.region, scorer.model)


def make_backend(scorer: Scorer, scorer_settings: ScorerSettings | None) -> Backend:
    """The backend for one catalog ``scorer`` block (not started)."""
    if scorer.backend == "local":
        from scorer.settings import ScorerSettings  # noqa: PLC0415
        from shadow.backends.local import LocalBackend  # noqa: PLC0415

        return LocalBackend(scorer_settings or ScorerSettings())
    if scorer.backend == "semif_http":
        from shadow.backends.semif_http import SemIfHttpBackend  # noqa: PLC0415

        return SemIfHttpBackend(scorer.endpoint)
    if scorer.backend == "chat":
        from shadow.backends.chat import ChatBackend  # noqa: PLC0415

        return ChatBackend(scorer.endpoint, scorer.model, scorer.max_tokens)
    from shadow.backends.sagemaker import SageMakerBackend  # noqa: PLC0415

    return SageMakerBackend(scorer.endpoint, scorer.region, scorer.endpoint_url, scorer.timeout_s)
