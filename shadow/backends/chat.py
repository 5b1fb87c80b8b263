"""``chat``: a standard chat-completions endpoint asked for exactly one option id.

``answer_mode`` (catalog, default ``json_schema``) says how the server is held to the option ids:

- ``json_schema``: ``response_format`` ``{"type": "json_schema", "json_schema": {..., "schema": S}}`` (OpenAI,
  vLLM, llama.cpp's C++ server), S an object whose ``answer`` is an ``enum`` of the option ids;
- ``json_object``: ``response_format`` ``{"type": "json_object", "schema": S}`` (llama-cpp-python's
  ``llama_cpp.server``, which rejects ``json_schema``);
- ``grammar``: a GBNF ``grammar``, ``Answer:`` then one of `` <id>`` (llama.cpp servers);
- ``free_text``: plain messages, the answer mapped to an option by id or text (no constraint).

A server that rejects the mode answers the first call with an error naming it: ``AnswerModeRejected``,
never a silent fall-back. With ``top_logprobs`` > 0 the backend asks for log-probabilities and turns them
into option probabilities (``chat_logprobs``); otherwise, or when the server returns none, the chosen
option gets 1. The prompt builder says which (``chat/2;<mode>;logprobs`` or ``...;one_hot``), and the
model identity carries the server (its ``Server`` header), the served model name and the mode.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from typing import Any

import aiohttp

from shadow.backends.base import ScoreResult
from shadow.backends.chat_logprobs import option_distribution
from shadow.backends.semif_http import client_session, post_json
from shadow.errors import InvalidScorerResponse, ScorerCallError, ScorerFailed, ScorerRejected
from shadow.state import canonical

SYSTEM = "You route decisions. Answer with exactly one option id from the list, and nothing else."
BUILDER = "chat/2"
MIN_LOGIT_PROBABILITY = 1e-9
"""An option with probability 0 is recorded with the logit ln(1e-9)."""
ANSWER = re.compile(r'"answer"\s*:\s*"')
GRAMMAR_LEAD = "Answer:"
"""The grammar mode's fixed start: the model's next token is then its choice among `` <id>``."""


class AnswerModeRejected(ScorerRejected):
    """The chat endpoint refuses the catalog's ``answer_mode``."""


def answer_schema(option_ids: list[str]) -> dict[str, Any]:
    """The JSON schema of an answer: ``{"answer": <one of the option ids>}``."""
    return {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": option_ids}},
        "required": ["answer"],
        "additionalProperties": False,
    }


def chat_body(
    request: dict[str, Any], model: str | None, max_tokens: int, mode: str = "free_text",
    top_logprobs: int = 0,
) -> dict[str, Any]:
    """The chat-completions body asking for one option id, constrained as ``mode`` says."""
    listing = "\n".join(f"- {o['id']}: {o['text']}" for o in request["options"])
    user = f"State:\n{canonical(request['state'])}\n\nQuestion: {request['question']}\nOptions:\n{listing}"
    body: dict[str, Any] = {
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}],
        "max_tokens": max_tokens, "temperature": 0, "stream": False,
    }
    ids = [o["id"] for o in request["options"]]
    if mode == "json_schema":
        schema = {"name": "answer", "strict": True, "schema": answer_schema(ids)}
        body["response_format"] = {"type": "json_schema", "json_schema": schema}
    elif mode == "json_object":
        body["response_format"] = {"type": "json_object", "schema": answer_schema(ids)}
    elif mode == "grammar":
        body["grammar"] = 'root ::= "Answer:" (' + " | ".join(json.dumps(" " + i) for i in ids) + ")"
    if top_logprobs > 0 and mode != "free_text":
        body |= {"logprobs": True, "top_logprobs": top_logprobs}
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


def constrained_answer(content: str, mode: str, option_ids: list[str]) -> tuple[str, int]:
    """The option id of a constrained answer and where it starts in ``content``."""
    if mode == "grammar":
        chosen = content.removeprefix(GRAMMAR_LEAD).strip()
        if content.startswith(GRAMMAR_LEAD) and chosen in option_ids:
            return chosen, len(GRAMMAR_LEAD)
        raise InvalidScorerResponse(f"answer {content[:80]!r} is not 'Answer: <option id>'")
    try:
        chosen = json.loads(content)["answer"]
    except (ValueError, TypeError, KeyError) as exc:
        raise InvalidScorerResponse(f'answer {content[:80]!r} is not {{"answer": <option id>}}') from exc
    found = ANSWER.search(content)
    if chosen not in option_ids or found is None:
        raise InvalidScorerResponse(f"answer {content[:80]!r} is not one of the option ids")
    return str(chosen), found.end()


class ChatBackend:
    """Calls ``POST {endpoint}/v1/chat/completions``."""

    name = "chat"

    def __init__(
        self, endpoint: str, model: str | None, max_tokens: int, answer_mode: str = "json_schema",
        top_logprobs: int = 0,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.url = self.endpoint + "/v1/chat/completions"
        self.model = model
        self.max_tokens = max_tokens
        self.mode = answer_mode
        self.top_logprobs = top_logprobs
        self.server: str | None = None
        self._session: Any = None

    async def start(self) -> None:
        """Open the one session."""
        self._session = client_session()

    async def _server(self) -> str:
        """The server's ``Server`` header from ``GET /v1/models`` (once; empty when unknown)."""
        if self.server is None:
            try:
                async with self._session.get(self.endpoint + "/v1/models",
                                             timeout=aiohttp.ClientTimeout(total=2)) as resp:
                    self.server = resp.headers.get("Server", "")
            except (TimeoutError, aiohttp.ClientError):
                return ""
        return self.server

    async def _call(self, body: dict[str, Any], limit_s: float) -> Any:
        try:
            return await post_json(self._session, self.url, body, limit_s)
        except (ScorerRejected, ScorerFailed) as exc:
            field = "grammar" if self.mode == "grammar" else "response_format"
            if self.mode != "free_text" and (field in str(exc) or isinstance(exc, ScorerRejected)):
                raise AnswerModeRejected(
                    f"{self.url} rejected answer_mode {self.mode!r} ({exc}); set the scorer's answer_mode to "
                    "one the server supports (json_schema: OpenAI, vLLM, llama.cpp server; json_object: "
                    "llama-cpp-python's server; grammar: llama.cpp) or free_text"
                ) from exc
            raise

    async def score(self, request: dict[str, Any], limit_s: float) -> ScoreResult:
        """One call; the constrained answer and, where the server gives them, option probabilities."""
        ids = [o["id"] for o in request["options"]]
        body = await self._call(chat_body(request, self.model, self.max_tokens, self.mode, self.top_logprobs),
                                limit_s)
        try:
            choice = body["choices"][0]
            answer = str(choice["message"]["content"])
            tokens = int((body.get("usage") or {}).get("total_tokens") or 0)
            content = (choice.get("logprobs") or {}).get("content") or []
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidScorerResponse(f"not a chat completion: {exc!r}") from exc
        probs: list[float] | None = None
        if self.mode == "free_text":
            chosen = match_option(answer, request["options"])
        else:
            chosen, start = constrained_answer(answer, self.mode, ids)
            if content:
                grammar = self.mode == "grammar"
                suffix, prefix = ("", " ") if grammar else ('"', "")
                probs = option_distribution(content, start, ids, suffix, prefix)
        source = "one_hot" if probs is None else "logprobs"
        if probs is None:
            probs = [1.0 if i == chosen else 0.0 for i in ids]
        logits = None if source == "one_hot" else [math.log(max(p, MIN_LOGIT_PROBABILITY)) for p in probs]
        model = {"name": str(body.get("model") or self.model or ""), "runtime": "chat",
                 "server": await self._server(), "answer_mode": self.mode}
        return ScoreResult(probabilities=probs, logits=logits, model=model,
                           prompt={"builder": f"{BUILDER};{self.mode};{source}"}, tokens=tokens)

    async def close(self) -> None:
        """Close the session."""
        if self._session is not None:
            await self._session.close()
            await asyncio.sleep(0)


__all__ = ["AnswerModeRejected", "ChatBackend", "ScorerCallError", "chat_body", "match_option"]
