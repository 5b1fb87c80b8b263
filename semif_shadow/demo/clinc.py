"""The CLINC150 workload (``--workload clinc150 --data DIR``): real assistant queries routed to domains.

``DIR`` holds CLINC150's ``data_full.json`` and ``domains.json`` (github.com/clinc/oos-eval). Each query
of the test split is a ticket whose truth is its domain; out-of-scope queries are declined by production
(``decline``, none of the options). The router's rules for it are a few keywords per domain.
"""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING

from semif_shadow.demo.rules import Rules
from semif_shadow.demo.workload import Ticket

if TYPE_CHECKING:
    from pathlib import Path

DOMAINS = {
    "banking": "Banking: accounts, transfers, bills, balances, fraud",
    "credit_cards": "Credit cards: cards, limits, rewards, credit scores",
    "kitchen_and_dining": "Kitchen and dining: recipes, cooking, restaurants, nutrition",
    "home": "Home: music, reminders, lists, calendar, smart home",
    "auto_and_commute": "Auto and commute: cars, fuel, tires, traffic, directions",
    "travel": "Travel: flights, hotels, visas, luggage, currency",
    "utility": "Utility: time, weather, alarms, timers, calculations, definitions",
    "work": "Work: pay, benefits, meetings, vacation, HR",
    "small_talk": "Small talk: greetings, jokes, questions about the assistant",
    "meta": "Meta: the assistant's own settings, name, language, voice",
}
DECLINE = "decline"
CLINC_RULES = Rules(
    (),
    {
        "banking": ("bank", "transfer", "balance", "bill", "fraud", "routing number", "checks"),
        "credit_cards": ("credit card", "card", "credit limit", "credit score", "rewards", "apr"),
        "kitchen_and_dining": ("recipe", "cook", "restaurant", "calories", "ingredient", "dinner", "bake"),
        "home": ("playlist", "song", "remind", "shopping list", "todo", "calendar", "lights"),
        "auto_and_commute": ("car", "gas", "tire", "oil", "traffic", "uber", "commute", "mpg"),
        "travel": ("flight", "hotel", "visa", "luggage", "passport", "vacation", "exchange rate", "trip"),
        "utility": ("time", "weather", "alarm", "timer", "calculate", "define", "spell", "flip a coin"),
        "work": ("paycheck", "pto", "meeting", "w-2", "401k", "insurance", "direct deposit", "boss"),
        "small_talk": ("hello", "joke", "how are you", "thank", "are you a", "goodbye", "fun fact"),
        "meta": ("your name", "change your", "accent", "language", "speak", "reset settings", "whisper"),
    },
)


def clinc150(data: Path, n: int, weeks: int, seed: int) -> list[Ticket]:
    """``n`` queries of the test split (in-scope and out-of-scope), shuffled with ``seed``, over ``weeks``."""
    full = json.loads((data / "data_full.json").read_text(encoding="utf-8"))
    domains = json.loads((data / "domains.json").read_text(encoding="utf-8"))
    domain_of = {intent: domain for domain, intents in domains.items() for intent in intents}
    rows = [(text, domain_of[intent]) for text, intent in full["test"]]
    rows += [(text, DECLINE) for text, _ in full["oos_test"]]
    rng = random.Random(seed)  # noqa: S311  (a reproducible sample, not a secret)
    picked = rng.sample(rows, min(n, len(rows)))
    return [Ticket(f"C-{seed}-{i:05d}", i * weeks // len(picked), "Assistant request", text,
                   {"id": rng.randrange(10_000, 99_999), "plan": "consumer"},
                   "out_of_scope" if domain == DECLINE else "clear", domain, tuple(DOMAINS))
            for i, (text, domain) in enumerate(picked)]
