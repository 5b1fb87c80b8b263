"""A fault-injecting SemIf scorer: a real aiohttp server on loopback whose behaviour the test controls.

It is named a fake on purpose: the model is not the point of the latency and fault tests. It answers
valid SemIf responses computed from the request (fixed logits derived from the option texts), the
SageMaker runtime path ``/endpoints/{name}/invocations`` and a chat-completions endpoint, and can be
made slow, erroring (500), overloaded (503 + Retry-After) or resetting connections. ``dead`` is a
closed port. Run standalone for the benchmark: ``python -m tests.shadow.fault_scorer --port 9001
--delay 2``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

MODES = ("healthy", "slow", "error", "overloaded", "reset", "throttled", "rejected")


@dataclass
class Faults:
    """What the scorer does next; tests change it between phases."""

    mode: str = "healthy"
    delay_s: float = 10.0
    retry_after: str = "0"
    chat_answer: str | None = None
    calls: int = 0
    paths: list[str] = field(default_factory=list)
    release: asyncio.Event = field(default_factory=asyncio.Event)


FAULTS = web.AppKey("faults", Faults)


def fixed_logits(options: list[Any]) -> list[float]:
    """A deterministic score per option: shorter texts score higher, ties broken by order."""
    texts = [o if isinstance(o, str) else o["text"] for o in options]
    return [-0.1 * len(t) - 0.01 * i for i, t in enumerate(texts)]


def semif_response(body: dict[str, Any]) -> dict[str, Any]:
    """A valid SemIf v1 response for the request."""
    options = body["options"]
    logits = fixed_logits(options)
    top = max(logits)
    weights = [math.exp(x - top) for x in logits]
    total = sum(weights)
    ids = [o if isinstance(o, str) else o["id"] for o in options]
    return {"semif_version": "1", "decision_id": body["decision_id"],
            "options": [{"id": i, "probability": w / total, "logit": x, "tokens": 1}
                        for i, w, x in zip(ids, weights, logits, strict=True)],
            "prompt": {"builder": "fault/1", "template_sha256": "0" * 64, "prompt_tokens": 42,
                       "cached_tokens": 0, "segments": [42], "truncated": False},
            "model": {"name": "fault-injecting-scorer", "sha256": "f" * 64, "quantization": "none",
                      "runtime_version": "fault/1", "device": "cpu"},
            "timing_ms": {"queue": 0.0, "score": 0.1}}


async def _fault(request: web.Request) -> web.Response | None:
    faults = request.app[FAULTS]
    faults.calls += 1
    faults.paths.append(request.path)
    if faults.mode == "slow":
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(faults.release.wait(), faults.delay_s)
    elif faults.mode == "error":
        return web.json_response({"error": {"code": "internal", "message": "injected", "field": None}},
                                 status=500)
    elif faults.mode == "overloaded":
        return web.json_response({"error": {"code": "overloaded", "message": "injected", "field": None}},
                                 status=503, headers={"Retry-After": faults.retry_after})
    elif faults.mode == "throttled":
        return web.json_response({"error": {"code": "throttled", "message": "injected", "field": None}},
                                 status=429)
    elif faults.mode == "rejected":
        error = {"code": "invalid_request", "message": "injected", "field": "options"}
        return web.json_response({"error": error}, status=400)
    elif faults.mode == "reset" and request.transport is not None:
        request.transport.close()
        return web.Response(status=500)
    return None


async def invocations(request: web.Request) -> web.Response:
    """SemIf over ``/invocations`` and ``/endpoints/{name}/invocations``."""
    body = await request.json()
    return await _fault(request) or web.json_response(semif_response(body))


async def chat(request: web.Request) -> web.Response:
    """Chat completions: answers the best option's id (or ``chat_answer``)."""
    body = await request.json()
    faults = request.app[FAULTS]
    fault = await _fault(request)
    if fault is not None:
        return fault
    user = body["messages"][-1]["content"]
    lines = [ln[2:].split(":", 1) for ln in user.splitlines() if ln.startswith("- ")]
    options = [{"id": i.strip(), "text": t.strip()} for i, t in lines]
    logits = fixed_logits(options)
    best = options[logits.index(max(logits))]["id"]
    answer = faults.chat_answer if faults.chat_answer is not None else best
    return web.json_response({"id": "c1", "object": "chat.completion", "model": body.get("model", "fault"),
                              "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                                           "finish_reason": "stop"}],
                              "usage": {"prompt_tokens": 40, "completion_tokens": 2, "total_tokens": 42}})


async def mirror_target(request: web.Request) -> web.Response:
    """Where nginx's ``mirror`` sends its copies in the benchmark: the same delay, then 204."""
    await request.read()
    return await _fault(request) or web.Response(status=204)


async def control(request: web.Request) -> web.Response:
    """``POST /_faults {"mode": ..., "delay_s": ...}`` (for the standalone benchmark process)."""
    faults = request.app[FAULTS]
    body = await request.json()
    faults.mode = body.get("mode", faults.mode)
    faults.delay_s = float(body.get("delay_s", faults.delay_s))
    return web.json_response({"mode": faults.mode, "calls": faults.calls})


async def ping(_: web.Request) -> web.Response:
    """Health."""
    return web.Response(text="ok")


def fault_app(faults: Faults | None = None) -> web.Application:
    """The scorer application."""
    app = web.Application()
    app[FAULTS] = faults or Faults()
    app.router.add_post("/invocations", invocations)
    app.router.add_post("/endpoints/{name}/invocations", invocations)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/_faults", control)
    app.router.add_route("*", "/mirror/{tail:.*}", mirror_target)
    app.router.add_get("/ping", ping)
    return app


def main() -> None:
    """Run standalone (benchmarks)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds per answer (0: healthy)")
    args = parser.parse_args()
    faults = Faults(mode="slow" if args.delay else "healthy", delay_s=args.delay)
    web.run_app(fault_app(faults), host="127.0.0.1", port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
