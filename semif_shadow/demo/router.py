"""The demo's production router: a real aiohttp service that routes tickets by deterministic rules.

``POST /route`` with ``{"ticket_id", "ticket": {"subject", "body", "customer"}}`` answers
``{"ticket_id", "team", "rule"}``. The rules count keyword hits per team: the team with the most hits
wins; a tie or no hit sends the ticket to ``review`` (a person decides later); an out-of-scope phrase
takes an action that is none of the catalog's options (``forward_to_sales``, ``close_no_reply``).
Run it with ``python -m semif_shadow.demo.router --port P [--rules synthetic|clinc150]``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from aiohttp import web

from semif_shadow.demo.clinc import CLINC_RULES
from semif_shadow.demo.rules import SUPPORT_RULES, Rules, route

RULES_KEY = web.AppKey("rules", Rules)


async def handle_route(request: web.Request) -> web.Response:
    """Route one ticket; a body that is not a ticket is a 400 naming the field."""
    try:
        body: Any = await request.json()
    except json.JSONDecodeError:
        return _error("body", "the body is not JSON")
    if not isinstance(body, dict) or not isinstance(body.get("ticket_id"), str):
        return _error("ticket_id", "ticket_id must be a string")
    ticket = body.get("ticket")
    if not isinstance(ticket, dict) or not isinstance(ticket.get("body"), str):
        return _error("ticket.body", "ticket.body must be a string")
    team, rule = route(request.app[RULES_KEY], f"{ticket.get('subject', '')} {ticket['body']}")
    return web.json_response({"ticket_id": body["ticket_id"], "team": team, "rule": rule})


async def handle_health(_request: web.Request) -> web.Response:
    """Liveness."""
    return web.json_response({"status": "ok"})


def _error(field: str, message: str) -> web.Response:
    return web.json_response({"error": {"code": "invalid_request", "message": message, "field": field}},
                             status=400)


def init_app(rules: Rules) -> web.Application:
    """The router application."""
    app = web.Application(client_max_size=1 << 20)
    app[RULES_KEY] = rules
    app.router.add_post("/route", handle_route)
    app.router.add_get("/healthz", handle_health)
    return app


def main(argv: list[str] | None = None) -> None:
    """Serve on 127.0.0.1 until SIGTERM or SIGINT."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--rules", choices=("synthetic", "clinc150"), default="synthetic")
    args = parser.parse_args(argv)
    rules = CLINC_RULES if args.rules == "clinc150" else SUPPORT_RULES
    web.run_app(init_app(rules), host="127.0.0.1", port=args.port, access_log=None, print=None,
                shutdown_timeout=1.0)


if __name__ == "__main__":
    main()
