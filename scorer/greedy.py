"""Greedy text generation for OpenAI-style chat bodies (what the standard llama.cpp container answers).

SemIf never generates; this exists so the SageMaker adapter can answer ``messages`` bodies like the
container it extends. It shares the engine's llama.cpp context (and lock), so it clears the prefix
cache: the next SemIf decision starts cold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from scorer.errors import PromptTooLong
from scorer.runtime import Token

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from scorer.engine import Engine


@dataclass(frozen=True, slots=True)
class Generation:
    """A finished completion."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str  # "stop" or "length"


def generate(
    engine: Engine,
    messages: Sequence[tuple[str, str]],
    max_tokens: int,
    on_text: Callable[[str], None] | None = None,
) -> Generation:
    """Greedy-decode a reply to ``messages``; ``on_text`` receives each new piece of text."""
    with engine.exclusive() as rt:
        prompt = rt.tokenize(rt.chat_prompt(messages), add_special=True, parse_special=True)
        if len(prompt) + max_tokens > rt.n_ctx:
            raise PromptTooLong(
                f"messages ({len(prompt)} tokens) + max_tokens ({max_tokens}) exceed "
                f"the context ({rt.n_ctx})",
                field="messages",
            )
        step = rt.config.n_batch
        for lo in range(0, len(prompt), step):
            chunk = prompt[lo : lo + step]
            rt.decode([Token(t, lo + k, (0,), lo + k == len(prompt) - 1) for k, t in enumerate(chunk)])
        pending, parts, finish, produced = b"", [], "length", 0
        while produced < max_tokens:
            token = rt.argmax_at(-1)
            if rt.is_eog(token):
                finish = "stop"
                break
            produced += 1
            pending += rt.piece(token)
            text, pending = _split_utf8(pending)
            if text:
                parts.append(text)
                if on_text is not None:
                    on_text(text)
            rt.decode([Token(token, len(prompt) + produced - 1, (0,), logits=True)])
        rt.clear()
    return Generation("".join(parts), len(prompt), produced, finish)


def _split_utf8(data: bytes) -> tuple[str, bytes]:
    """Decode the longest complete UTF-8 prefix; keep an unfinished character for later."""
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            return data[:cut].decode("utf-8"), data[cut:]
        except UnicodeDecodeError:
            continue
    return data.decode("utf-8", "replace"), b""
