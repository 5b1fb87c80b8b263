"""Tokenization and canonical segmentation of one decision (pure functions over token lists).

A decision is decoded as three canonical segments, so that the same request always meets the same
llama.cpp kernels whether or not its prefix was cached:

    [0, static)        the decision type's static prefix (instructions, question, options)
    [static, shared)   the per-decision suffix (state, answer lead-in); logits of its last token
                       give every option's first-token log-probability
    option branches    each option's remaining tokens, one sequence per option

``shared`` is the token prefix that every option's joint tokenization (prompt + option as one string)
has in common with the prompt's own tokenization, capped so every option keeps at least one token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from scorer.prompt import RenderedPrompt

    Tokenize = Callable[[str], list[int]]


@dataclass(frozen=True, slots=True)
class Segmented:
    """One decision cut into canonical segments."""

    prompt: RenderedPrompt
    prefix: tuple[int, ...]  # the shared prefix: static segment + suffix segment
    static_len: int  # length of the static segment (a prefix of `prefix`)
    options: tuple[tuple[int, ...], ...]  # each option's tokens after the shared prefix

    @property
    def static(self) -> tuple[int, ...]:
        """The static segment's tokens (the cache key of the prefix cache)."""
        return self.prefix[: self.static_len]

    @property
    def segments(self) -> list[int]:
        """Token counts of the prompt segments, as ``prompt.segments`` reports them."""
        return [self.static_len, len(self.prefix) - self.static_len]


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def segment(
    prompt: RenderedPrompt,
    option_texts: Sequence[str],
    tokenize: Tokenize,
    static_tokens: Sequence[int] | None = None,
) -> Segmented:
    """Tokenize prompt + each option as one string and cut at the shared prefix.

    ``static_tokens`` (the tokens of ``prompt.static`` alone, cached per decision type by the
    engine) only saves a tokenizer call; it must equal ``tokenize(prompt.static)``.
    """
    prompt_tokens = tokenize(prompt.text)
    joint = [tokenize(prompt.text + text) for text in option_texts]
    shared = len(prompt_tokens)
    for tokens in joint:
        shared = min(shared, common_prefix_len(prompt_tokens, tokens), len(tokens) - 1)
    if shared < 1:
        raise ValueError("the prompt has no token to condition the options on")
    prefix = tuple(joint[0][:shared])
    static_alone = tokenize(prompt.static) if static_tokens is None else static_tokens
    static_len = common_prefix_len(static_alone, prefix)
    static_len = min(static_len, shared - 1)  # the suffix segment is never empty: it yields the logits
    return Segmented(
        prompt=prompt,
        prefix=prefix,
        static_len=static_len,
        options=tuple(tuple(tokens[shared:]) for tokens in joint),
    )
