"""The demo router's rules: out-of-scope phrases, then keyword hits per team (see `route`).

The rules are data the router service (`semif_shadow.demo.router`) is started with; each workload
brings its own table (`SUPPORT_RULES` here for the synthetic tickets, `clinc.CLINC_RULES`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

REVIEW = "review"


@dataclass(frozen=True)
class Rules:
    """The router's rules: out-of-scope phrases and their actions, then keywords per team."""

    out_of_scope: tuple[tuple[str, str], ...]
    keywords: dict[str, tuple[str, ...]]


SUPPORT_RULES = Rules(
    (("partnership", "forward_to_sales"), ("reseller", "forward_to_sales"), ("quote", "forward_to_sales"),
     ("apply for", "close_no_reply"), ("unsubscribe", "close_no_reply")),
    {
        "billing": ("charged", "refund", "invoice", "billed", "payment", "price", "vat", "fee", "paid"),
        "technical": ("crash", "sync", "error", "fails", "load", "export", "bug", "update", "two-factor"),
        "account": ("log in", "login", "password", "account", "email address", "admin", "locked"),
        "shipping": ("parcel", "order", "delivery", "tracking", "carrier", "address", "return label", "box"),
    },
)


def route(rules: Rules, text: str) -> tuple[str, str]:
    """The team (or action) for a ticket's text, and the rule that decided it."""
    lowered = text.lower()
    for phrase, action in rules.out_of_scope:
        if phrase in lowered:
            return action, f"out_of_scope:{phrase}"
    hits = {team: sum(len(re.findall(rf"\b{re.escape(k)}", lowered)) for k in words)
            for team, words in rules.keywords.items()}
    ranked = sorted(hits.items(), key=lambda kv: -kv[1])
    if ranked[0][1] == 0:
        return REVIEW, "no_keyword"
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return REVIEW, f"tie:{ranked[0][0]}+{ranked[1][0]}"
    return ranked[0][0], f"keywords:{ranked[0][0]}"
