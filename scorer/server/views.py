"""HTTP handlers: `/ping`, `/invocations`, `/metrics`."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web
from aiohttp.web_protocol import RequestPayloadError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from contracts.encoding import decode_body
from contracts.errors import InvalidRequest
from contracts.semif import decode_json, parse_request
from scorer.errors import NotReady
from scorer.server import chat
from scorer.server.keys import METRICS, SERVICE, SETTINGS


async def ping(request: web.Request) -> web.Response:
    """200 once the model is loaded; 503 not_ready before (and while shutting down)."""
    service = request.app[SERVICE]
    if service.engine is None or service.draining:
        raise NotReady("model is still loading" if service.engine is None else "server is shutting down")
    return web.json_response({"status": "ok", "model": service.engine.identity.file})


async def invocations(request: web.Request) -> web.StreamResponse:
    """A SemIf request, or an OpenAI-style chat body (``messages``)."""
    payload = await read_json(request)
    return await dispatch(request, payload)


async def dispatch(request: web.Request, payload: dict[str, Any]) -> web.StreamResponse:
    """Route a decoded body to SemIf scoring or chat."""
    service = request.app[SERVICE]
    if "messages" in payload:
        settings = request.app[SETTINGS]
        chat_request = chat.parse_chat(payload, settings.chat_max_tokens)
        model = service.engine.identity.name if service.engine else "unknown"
        return await chat.answer(request, service, chat_request, model)
    semif = parse_request(payload)
    response = await service.submit("score", semif)
    return web.json_response(response.to_json(), dumps=_dumps)


async def read_json(request: web.Request) -> dict[str, Any]:
    """The body as a JSON object: 415 on another content type or coding, 413 over the cap, 400 on bad JSON.

    The cap holds for the body as sent and as decoded from its ``Content-Encoding`` (`decode_body`).
    """
    if request.content_type != "application/json":
        raise web.HTTPUnsupportedMediaType(
            reason=f"Content-Type must be application/json, not {request.content_type or 'none'}"
        )
    try:
        body = await request.read()  # client_max_size caps it (413)
    except RequestPayloadError as exc:  # a torn chunked body
        raise InvalidRequest(f"body cannot be read: {exc}", field="body") from exc
    cap = request.app[SETTINGS].max_body_bytes
    body = decode_body(body, request.headers.get("Content-Encoding", ""), cap)
    payload = decode_json(body)
    if not isinstance(payload, dict):
        raise InvalidRequest("request body must be a JSON object", field="body")
    return payload


async def metrics(request: web.Request) -> web.Response:
    """Prometheus text exposition."""
    body = generate_latest(request.app[METRICS].registry)
    return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False)
