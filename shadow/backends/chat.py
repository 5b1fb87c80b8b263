"""``chat``: a standard chat-completions endpoint; the generated answer is mapped to an option id.

A generated answer carries no probabilities: a matched option gets probability 1 (the others 0) and
``logits`` stay null. An answer that names no option, or more than one, is ``invalid_response``.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from shadow.backends.base import ScoreResult
from shadow.backends.semif_http import client_session, post_json
from shadow.errors import InvalidScorerResponse
from shadow.state import canonical

SYSTEM = ("You route decisions. Answer with exactly one option id from the list, and nothing else.")


def chat_body(request: dict[str, Any], model: str | None, max_tokens: int) -> dict[str, Any]:
    """The chat-completions body asking for one option id."""
    listing = "\n".join(f"- {o['id']}: {o['text']}" for o in request["options"])
    user = f"State:\n{canonical(request['state'])}\n\nQuestion: {request['question']}\nOptions:\n{listing}"
    body: dict[str, Any] = {"messages": [{"role": "system", "content": SYSTEM},
                                         {"role": "user", "content": user}],
                            "max_tokens": max_tokens, "temperature": 0, "stream": False}
    if model:
        body["model"] = model
    return body


def _norm(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", " ", text.lower()).strip()


def match_option(answer: str, options: list[dict[str, str]]) -> str:
    """The one option id the answer names (by id or text), or raise `InvalidScorerResponse`."""
    said = _norm(answer)
    exact = [o["id"] for o in options if said in {_norm(o["id"]), _norm(o["text"])}]
    if len(exact) == 1:
        return exact[0]
    words = f" {said} "
    named = [o["id"] for o in options if f" {_norm(o['id'])} " in words]
    if len(named) == 1:
        return named[0]
    raise InvalidScorerResponse(f"answer {answer[:80]!r} names {len(named)} of the declared options")


class ChatBackend:
    """Calls ``POST {endpoint}/v1/chat/completions``."""

    name = "chat"

    def __init__(self, endpoint: str, model: str | None, max_tokens: int) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.url = self.endpoint + "/v1/chat/completions"
        self.model = model
        self.max_tokens = max_tokens
        self._session: Any = None

    async def start(self) -> None:
        """Open the one session."""
        self._session = client_session()

    async def score(self, request: dict[str, Any], limit_s: float) -> ScoreResult:
        """One call; map the answer to an option."""
        body = await post_json(self._session, self.url, chat_body(request, self.model, self.max_tokens),
                               limit_s)
        try:
            answer = str(body["choices"][0]["message"]["content"])
            usage = body.get("usage") or {}
            tokens = int(usage.get("total_tokens") or 0)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidScorerResponse(f"not a chat completion: {exc!r}") from exc
        chosen = match_option(answer, request["options"])
        probs = [1.0 if o["id"] == chosen else 0.0 for o in request["options"]]
        model = {"name": str(body.get("model") or self.model or "")}
        return ScoreResult(probabilities=probs, logits=None, model=model, prompt={"builder": "chat/1"},
                           tokens=tokens)

    async def close(self) -> None:
        """Close the session."""
        if self._session is not None:
            await self._session.close()
            await asyncio.sleep(0)
