"""Option probabilities from a chat answer's token log-probabilities (``logprobs`` / ``top_logprobs``).

The method. The answer's text is the concatenation of its tokens; the option id starts at a known
character offset (after ``{"answer": "`` in the JSON modes, at the start in the grammar mode). At the
token where the id starts, every alternative in ``top_logprobs`` (and the generated token itself) is
matched against each option's remaining text (``lead + id + suffix``, the suffix being the closing
quote in the JSON modes): a token is *consistent* with an option when one is a prefix of the other.
Tokens consistent with no option are dropped and the rest renormalized (the options that are
reachable). A token consistent with one option gives it its probability; when several options share
the generated token (``bill`` for ``bill`` and ``billing``) the walk goes on to the next generated
token with those options and the shared token's probability, so the split comes from the model.

Limits (written in ``docs/sidecar.md``):

- Only ``top_logprobs`` alternatives are seen: an option whose first token is not among them gets
  probability 0 (OpenAI allows at most 20).
- An alternative that is not the generated token is followed no further: options that share it but not
  the generated path split its probability evenly (their later tokens were never scored).
- Servers return the model's distribution before the constraint masks it (llama.cpp does), so the
  renormalization over reachable options is what makes it a distribution over the options; a server that
  returns masked log-probabilities gives the same after renormalization.
- An option id that is a prefix of another is told apart only by the JSON modes' closing quote; in the
  grammar mode they split evenly.
- Letters are compared without case: a token ``" Billing"`` counts for the option ``billing`` (small
  models put much of their mass on the capitalized word).
- Fewer than two options reachable: no distribution (the row stays one-hot and says so).
"""

from __future__ import annotations

import math
from typing import Any

MIN_REACHABLE = 2
"""Options that must get some probability for a distribution to say more than the answer."""


def option_distribution(
    tokens: list[dict[str, Any]], start: int, option_ids: list[str], suffix: str, prefix: str = ""
) -> list[float] | None:
    """Probabilities of ``option_ids`` (same order) from the answer's ``logprobs.content``; None if unknown.

    ``start``: the character offset of ``prefix`` + the chosen option id in the answer; ``prefix`` and
    ``suffix``: what precedes and follows an id in the answer's form (the grammar mode's space before
    the id; the JSON modes' closing quote). None also when fewer than two options are reachable: such a
    distribution says nothing beyond the answer.
    """
    ends, offset = [], 0
    for token in tokens:
        offset += len(str(token.get("token", "")))
        ends.append(offset)
    k = next((i for i, end in enumerate(ends) if end > start), None)
    if k is None:
        return None
    token_start = ends[k] - len(str(tokens[k]["token"]))
    lead = "".join(str(t["token"]) for t in tokens)[token_start:start]
    mass = dict.fromkeys(option_ids, 0.0)
    remaining = {o: (lead + prefix + o + suffix).lower() for o in option_ids}
    if not _walk(tokens, k, remaining, 1.0, mass):
        return None
    total = sum(mass.values())
    if total <= 0 or sum(m > 0 for m in mass.values()) < MIN_REACHABLE:
        return None
    return [mass[o] / total for o in option_ids]


def _alternatives(token: dict[str, Any]) -> dict[str, float]:
    """Token text -> probability at one position: the top alternatives and the generated token."""
    alternatives = token.get("top_logprobs") or []
    found = {str(alt.get("token", "")): math.exp(float(alt["logprob"])) for alt in alternatives}
    found[str(token["token"])] = math.exp(float(token["logprob"]))
    merged: dict[str, float] = {}
    for text, p in found.items():  # the same letters in another case count as one token
        merged[text.lower()] = merged.get(text.lower(), 0.0) + p
    return merged


def _walk(
    tokens: list[dict[str, Any]], k: int, remaining: dict[str, str], weight: float, mass: dict[str, float]
) -> bool:
    """Share ``weight`` among the options in ``remaining`` by the alternatives at token ``k``."""
    reach = {}
    for text, p in _alternatives(tokens[k]).items():
        consistent = [
            o for o, rest in remaining.items() if text and (rest.startswith(text) or text.startswith(rest))
        ]
        if consistent:
            reach[text] = (p, consistent)
    total = sum(p for p, _ in reach.values())
    if total <= 0:
        return False
    path = str(tokens[k]["token"]).lower()
    for text, (p, consistent) in reach.items():
        share = weight * p / total
        after = {o: remaining[o][len(text):] for o in consistent}
        deeper = text == path and len(consistent) > 1 and k + 1 < len(tokens) and all(after.values())
        if deeper and _walk(tokens, k + 1, after, share, mass):
            continue
        for o in consistent:
            mass[o] += share / len(consistent)
    return True
