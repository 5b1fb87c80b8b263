"""The demo's decision catalog: one type, ``ticket_routing``, behind the router's ``POST /route``.

Two candidates on the same scorer: the champion ``pmi`` (contextual calibration) and the challenger
``none`` (raw probabilities). Every ticket is sampled; no rate cap or budget (the demo's clock runs fast).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import yaml

from semif_shadow.demo.clinc import DOMAINS

if TYPE_CHECKING:
    from pathlib import Path

DECISION_TYPE = "ticket_routing"
CANDIDATES = {"pmi": "pmi", "none": "none"}
"""candidate name -> SemIf normalization; the first is the champion."""
DEADLINE_S = 1200.0
"""Each decision's deadline in the sidecar (queue, calls, retries): by then it has its row, scored or not."""
TOKEN_ENV = "DEMO_SHADOW_TOKEN"  # noqa: S105  (the variable's name, not a token)
SUPPORT_OPTIONS = (
    {"id": "billing", "text": "Billing: charges, refunds, invoices"},
    {"id": "technical", "text": "Technical support: crashes, errors, sync"},
    {"id": "account", "text": "Account management: log-in, access, users", "high_consequence": True},
    {"id": "shipping", "text": "Shipping: deliveries, tracking, returns"},
    {"id": "review", "text": "A person should review this ticket"},
)


def options(workload: str) -> list[dict[str, Any]]:
    """The declared options of the workload's routing decision."""
    if workload == "clinc150":
        return [*({"id": k, "text": v} for k, v in DOMAINS.items()),
                {"id": "review", "text": "A person should review this request"}]
    return [dict(o) for o in SUPPORT_OPTIONS]


def scorer_block(endpoint: str, normalization: str) -> dict[str, Any]:
    """One candidate: the demo's scorer server, with timeouts for a busy laptop, not for production.

    Both candidates share one scorer on a few cores: a call may wait behind the other lane's. The demo
    waits for every row anyway, so a slow call is better than a timeout (which would also retry).
    """
    return {"backend": "semif_http", "endpoint": endpoint, "normalization": normalization,
            "timeout_s": 300.0, "deadline_s": DEADLINE_S, "max_attempts": 2,
            "backoff_base_s": 0.05, "backoff_max_s": 1.0}


def catalog(scorer_url: str, workload: str) -> dict[str, Any]:
    """The catalog as a YAML-ready dict."""
    (champion, norm), *challengers = CANDIDATES.items()
    return {"version": 1, "decision_types": {DECISION_TYPE: {
        "question": "Which team should handle this support ticket?",
        "options": options(workload),
        "review_option": "review",
        "state": {"include": ["subject", "body", "customer.plan", "customer.id"],
                  "hash": ["customer.id"], "store": True},
        "sampling": {"rate": 1.0},
        "scorer": scorer_block(scorer_url, norm),
        "champion": champion,
        "candidates": {name: scorer_block(scorer_url, n) for name, n in challengers},
        "experiment_ends_at": "2099-01-01T00:00:00Z",
        "auth_token_env": TOKEN_ENV,
        "proxy": {"method": "POST", "path": "/route",
                  "decision_id": {"source": "request_json", "path": "ticket_id"},
                  "state": {"source": "request_json", "path": "ticket"},
                  "outcome": {"source": "response_json", "path": "team"},
                  "outcome_statuses": [200]},
    }}}


def write(path: Path, scorer_url: str, workload: str) -> Path:
    """Write the catalog YAML to ``path``."""
    path.write_text(yaml.safe_dump(catalog(scorer_url, workload), sort_keys=False), encoding="utf-8")
    return path
