"""The respond phase: raw option log-likelihoods become a SemIf response.

`normalize` applies the request's normalization, `softmax` gives the probabilities over the declared
options, and `respond` pins the prompt and model identity into a ``contracts.semif.ScoreResponse``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from contracts.semif import ModelInfo, OptionScore, PromptInfo, ScoreResponse
from scorer import prompt

if TYPE_CHECKING:
    from collections.abc import Sequence

    from contracts.semif import ScoreRequest
    from scorer.identity import ModelIdentity
    from scorer.segments import Segmented

FloatArray = np.ndarray[Any, np.dtype[np.float64]]


def respond(  # noqa: PLR0913  (assembles the response from every phase's result)
    request: ScoreRequest,
    *,
    seg: Segmented,
    state_tokens_dropped: int,
    logits: FloatArray,
    cached_tokens: int,
    probs: FloatArray,
    identity: ModelIdentity,
    timing: dict[str, float],
    batched: int = 1,
) -> ScoreResponse:
    """The SemIf response of one scored decision (``contracts.semif.ScoreResponse``)."""
    show = request.scoring.return_prompt
    options = [
        OptionScore(id=option.id, probability=float(probs[i]), logit=float(logits[i]),
                    tokens=len(seg.options[i]), **({"token_ids": list(seg.options[i])} if show else {}))
        for i, option in enumerate(request.options)
    ]
    prompt_meta = PromptInfo(
        builder=prompt.BUILDER_NAME,
        template_sha256=prompt.TEMPLATE_SHA256,
        prompt_tokens=len(seg.prefix),
        cached_tokens=cached_tokens,
        segments=seg.segments,
        truncated=state_tokens_dropped > 0,
        state_tokens_dropped=state_tokens_dropped,
        **({"text": seg.prompt.text} if show else {}),
    )
    model = identity.to_json()
    if batched > 1 and not identity.batch_invariant:  # invariant: the same bits alone, the same identity
        model["segmentation"] = f"static|suffix|options-batched|cross-request:{batched}"
    return ScoreResponse(
        decision_id=request.decision_id,
        options=options,
        prompt=prompt_meta,
        model=ModelInfo(**model),
        timing_ms={k: round(v, 3) for k, v in timing.items()},
    )


def normalize(
    logits: FloatArray,
    how: str,
    option_tokens: Sequence[Sequence[int]],
    texts: Sequence[str],
    content_free: FloatArray | None,
) -> FloatArray:
    """Apply a SemIf normalization to raw option log-likelihoods."""
    if how == "per_token":
        return logits / np.array([len(t) for t in option_tokens], dtype=np.float64)
    if how == "per_char":
        return logits / np.array([len(t) for t in texts], dtype=np.float64)
    if how == "pmi":
        assert content_free is not None
        return logits - content_free
    return logits


def softmax(scores: FloatArray) -> FloatArray:
    """Probabilities over the declared options (float64, max-shifted)."""
    shifted: FloatArray = np.exp(scores - scores.max())
    return shifted / float(shifted.sum())
