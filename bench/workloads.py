"""Benchmark workloads read from a public dataset outside the repository (never copied into it).

CLINC150 domain routing: route a user query to one of the 10 domains or to "out of scope". The dataset
(Larson et al. 2019, github.com/clinc/oos-eval) is read from ``$CLINC150_DIR``, default ``oos-eval/data``
(a clone of that repository in the working folder): its ``data_full.json`` and ``domains.json``.
`clinc_routing` returns None where it is absent so callers can skip cleanly.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CLINC_DIR = Path(os.environ.get("CLINC150_DIR", "oos-eval/data"))
MISSING = "CLINC150 not found: set CLINC150_DIR to the folder holding data_full.json and domains.json"

# The decision type's question describes the teams: it is static, so the prefix cache makes it free.
ROUTING_QUESTION = (
    "Which team should handle this request? Banking: bank accounts, transfers, bills, balances, fraud. "
    "Credit cards: cards, credit limits, rewards, credit scores. Kitchen and dining: recipes, cooking, "
    "restaurants, nutrition. Home: music, reminders, shopping and todo lists, calendar, smart home. "
    "Auto and commute: cars, fuel, tires, traffic, directions. Travel: flights, hotels, visas, luggage, "
    "currency. Utility: time, weather, alarms, timers, calculations, definitions, spelling. Work: pay, "
    "benefits, meetings, vacation requests, HR. Small talk: greetings, jokes, chat about the assistant's "
    "feelings. Meta: settings of the assistant itself, its name, language, voice. Out of scope: anything "
    "the other teams do not handle."
)
DOMAIN_TEXT = {
    "banking": "Banking",
    "credit_cards": "Credit cards",
    "kitchen_and_dining": "Kitchen and dining",
    "home": "Home",
    "auto_and_commute": "Auto and commute",
    "travel": "Travel",
    "utility": "Utility",
    "work": "Work",
    "small_talk": "Small talk",
    "meta": "Meta",
    "oos": "Out of scope",
}


@dataclass(frozen=True, slots=True)
class Decision:
    """One labelled routing decision."""

    decision_id: str
    text: str
    label: str

    def request(self, normalization: str = "none") -> dict[str, Any]:
        """The SemIf request for this decision."""
        return {
            "decision_id": self.decision_id,
            "decision_type": "clinc_routing",
            "state": self.text,
            "question": ROUTING_QUESTION,
            "options": [{"id": k, "text": v} for k, v in DOMAIN_TEXT.items()],
            "scoring": {"normalization": normalization},
        }


def clinc_routing(
    n_in_scope_per_domain: int = 12, n_oos: int = 30, seed: int = 7, root: Path = CLINC_DIR
) -> list[Decision] | None:
    """A stratified, shuffled sample of the CLINC150 test split (default 150 decisions), or None."""
    data_file, domains_file = root / "data_full.json", root / "domains.json"
    if not data_file.is_file() or not domains_file.is_file():
        return None
    data = json.loads(data_file.read_text())
    intent_domain = {
        intent: domain
        for domain, intents in json.loads(domains_file.read_text()).items()
        for intent in intents
    }
    rng = random.Random(seed)
    by_domain: dict[str, list[str]] = {}
    for text, intent in data["test"]:
        by_domain.setdefault(intent_domain[intent], []).append(text)
    picked = [
        (text, domain)
        for domain in sorted(by_domain)
        for text in rng.sample(by_domain[domain], n_in_scope_per_domain)
    ]
    picked += [(text, "oos") for text, _ in rng.sample(data["oos_test"], n_oos)]
    rng.shuffle(picked)
    return [Decision(f"clinc-{i}", text, label) for i, (text, label) in enumerate(picked)]
