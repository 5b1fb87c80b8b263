"""Build one backend per distinct scorer in the catalog (types that share a scorer share its client)."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from shadow.errors import ShadowError

if TYPE_CHECKING:
    from contracts.catalog import Scorer
    from scorer.settings import ScorerSettings
    from shadow.backends.base import Backend

BackendKey = tuple[str, str, str | None, str, str | None, str, int]


def backend_key(scorer: Scorer) -> BackendKey:
    """What makes two catalog scorers the same client."""
    return (scorer.backend, scorer.endpoint, scorer.endpoint_url, scorer.region, scorer.model,
            scorer.answer_mode, scorer.top_logprobs)


def make_backend(scorer: Scorer, scorer_settings: ScorerSettings | None) -> Backend:
    """The backend for one catalog ``scorer`` block (not started)."""
    if scorer.backend == "local":
        if importlib.util.find_spec("llama_cpp") is None:
            raise ShadowError("backend local runs the scorer in this process: install the scorer extra "
                              "(pip install 'semif-shadow[scorer]'), or use semif_http or sagemaker")
        from scorer.settings import ScorerSettings  # noqa: PLC0415
        from shadow.backends.local import LocalBackend  # noqa: PLC0415

        return LocalBackend(scorer_settings or ScorerSettings())
    if scorer.backend == "semif_http":
        from shadow.backends.semif_http import SemIfHttpBackend  # noqa: PLC0415

        return SemIfHttpBackend(scorer.endpoint)
    if scorer.backend == "chat":
        from shadow.backends.chat import ChatBackend  # noqa: PLC0415

        return ChatBackend(scorer.endpoint, scorer.model, scorer.max_tokens, scorer.answer_mode,
                           scorer.top_logprobs)
    from shadow.backends.sagemaker import SageMakerBackend  # noqa: PLC0415

    return SageMakerBackend(scorer.endpoint, scorer.region, scorer.endpoint_url, scorer.timeout_s)
