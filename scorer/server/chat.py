"""OpenAI-style chat bodies on `/invocations`, answered like the standard llama.cpp container.

``{"messages": [{"role", "content"}], "max_tokens": n, "stream": bool}``; other OpenAI fields
(``model``, ``temperature``, ...) are accepted and ignored: decoding is greedy. The answer is
``choices[0].message.content``, or server-sent events of ``choices[0].delta.content`` then
``data: [DONE]`` when ``stream`` is true.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from aiohttp import web

from contracts.errors import InvalidRequest
from scorer.greedy import Generation, generate

if TYPE_CHECKING:
    from scorer.server.service import ScoringService

ROLES = {"system", "user", "assistant"}


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """A validated chat body."""

    messages: list[tuple[str, str]]
    max_tokens: int
    stream: bool


def parse_chat(payload: dict[str, Any], default_max_tokens: int) -> ChatRequest:
    """Validate a chat body; a 400 names the field."""
    messages = payload.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest("messages must be a non-empty list", field="messages")
    parsed: list[tuple[str, str]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise InvalidRequest("each message is an object", field=f"messages[{i}]")
        role, content = message.get("role"), message.get("content")
        if role not in ROLES:
            raise InvalidRequest(f"role must be one of {sorted(ROLES)}", field=f"messages[{i}].role")
        if not isinstance(content, str):
            raise InvalidRequest("content must be a string", field=f"messages[{i}].content")
        parsed.append((role, content))
    max_tokens = payload.get("max_tokens", default_max_tokens)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= 4096:
        raise InvalidRequest("max_tokens must be an integer in 1..4096", field="max_tokens")
    stream = payload.get("stream", False)
    if not isinstance(stream, bool):
        raise InvalidRequest("stream must be a boolean", field="stream")
    return ChatRequest(parsed, max_tokens, stream)


def completion_body(gen: Generation, model: str) -> dict[str, Any]:
    """The non-streaming answer."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": gen.text},
                "finish_reason": gen.finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": gen.prompt_tokens,
            "completion_tokens": gen.completion_tokens,
            "total_tokens": gen.prompt_tokens + gen.completion_tokens,
        },
    }


async def answer(
    request: web.Request, service: ScoringService, chat: ChatRequest, model: str
) -> web.StreamResponse:
    """Run the chat job through the service's queue; stream it when asked."""
    if not chat.stream:
        gen = await service.submit("chat", partial(_run, chat, None))
        return web.json_response(completion_body(gen, model))
    loop = asyncio.get_running_loop()
    pieces: asyncio.Queue[str | None] = asyncio.Queue()

    def on_text(text: str) -> None:
        loop.call_soon_threadsafe(pieces.put_nowait, text)

    future = service.submit("chat", partial(_run, chat, on_text))
    future.add_done_callback(lambda _f: pieces.put_nowait(None))
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await response.prepare(request)
    chunk_id = f"chatcmpl-{uuid.uuid4().hex}"
    while (text := await pieces.get()) is not None:
        await _event(response, chunk_id, model, {"content": text}, None)
    done: Generation = future.result()
    await _event(response, chunk_id, model, {}, done.finish_reason)
    await response.write(b"data: [DONE]\n\n")
    await response.write_eof()
    return response


async def _event(
    response: web.StreamResponse, chunk_id: str, model: str, delta: dict[str, str], finish: str | None
) -> None:
    body = {
        "id": chunk_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    await response.write(f"data: {json.dumps(body)}\n\n".encode())


def _run(chat: ChatRequest, on_text: Any, engine: Any) -> Generation:
    return generate(engine, chat.messages, chat.max_tokens, on_text)
