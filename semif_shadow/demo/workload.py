"""The demo's ticket workload: support tickets a production router sees, with the truth behind each.

Deterministic for a seed. Four teams (`TEAMS`), written from templates with varied slots, plus the
tickets that make a trial interesting:

- **clear**: one team's words; the router's rules route it, mostly right;
- **misleading**: words of another team's rules dominate (a login error that is really an app bug), so
  the rules route it wrong;
- **ambiguous**: two teams' problems in one ticket; the rules cannot pick and send it to review, where a
  person decides later (a late outcome);
- **out of scope**: not support at all (a sales lead, a job application); production takes an action
  that is none of the declared options.

The last week shifts the mix (a carrier outage doubles the shipping tickets), so drift has something
to show.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from typing import Any

TEAMS = ("billing", "technical", "account", "shipping")
OUT_OF_SCOPE_ACTIONS = ("forward_to_sales", "close_no_reply")
PLANS = ("free", "pro", "business")

_SLOTS: dict[str, tuple[str, ...]] = {
    "amount": ("9.99", "14.50", "29.00", "49.90", "120.00", "310.75"),
    "month": ("March", "June", "September", "October", "November"),
    "device": ("iPhone 14", "Pixel 8", "Galaxy S23", "iPad", "Windows laptop", "MacBook"),
    "page": ("settings page", "dashboard", "checkout", "export screen", "calendar view"),
    "error": ("error 500", "a blank screen", "'something went wrong'", "a spinning wheel", "error 403"),
    "days": ("three", "five", "eight", "ten", "twelve"),
    "carrier": ("DHL", "UPS", "the postal service", "FedEx"),
    "city": ("Lyon", "Leeds", "Porto", "Gdansk", "Austin"),
}

_TEMPLATES: dict[str, tuple[tuple[str, str], ...]] = {
    "billing": (
        ("Charged twice", ("I was charged twice for my subscription in {month}, {amount} each time. "
                           "Please refund one of the payments.")),
        ("Wrong invoice", ("The invoice for {month} shows {amount} but my plan costs less. "
                           "The VAT number on it is also wrong.")),
        ("Refund request", "I cancelled in the trial but still got billed {amount}. How do I get a refund?"),
        ("Card declined", "My card payment was declined at renewal although the card works elsewhere."),
        ("Price increase", "Why did my monthly charge go up to {amount}? Nobody told me about a new price."),
    ),
    "technical": (
        ("App crashes", "The app crashes every time I open the {page} on my {device}."),
        ("Sync broken", "Since the last update my data no longer syncs between my {device} and the web."),
        ("Error on save", "Saving a document fails with {error}. I tried another browser, same thing."),
        ("Slow loading", "The {page} takes more than a minute to load and then shows {error}."),
        ("Export fails", "Exporting to CSV produces an empty file on my {device}."),
    ),
    "account": (
        ("Cannot log in", "I cannot log in: the password reset email never arrives."),
        ("Change email", "I need to change the email address on my account to my new work address."),
        ("Delete account", "Please delete my account and all the data you hold about me."),
        ("Add a user", "How do I add two colleagues to our team account and give them admin rights?"),
        ("Locked out", "My account was locked after too many login attempts and the unlock link expired."),
    ),
    "shipping": (
        ("Parcel late", "My order was due {days} days ago and the {carrier} tracking has not moved."),
        ("Wrong address", "I typed the wrong delivery address, it should go to {city}. Can you fix it?"),
        ("Damaged box", "The parcel came from {carrier} with the box crushed and the device inside broken."),
        ("Missing item", "The delivery to {city} came with one item missing from the order."),
        ("Return label", "I want to send the device back. Where do I get a return label for {carrier}?"),
    ),
}

# Tickets whose words point the rules at `looks_like` while the truth is `team`.
_MISLEADING: tuple[tuple[str, str, str, str], ...] = (
    ("technical", "account", "Login page error",
     "The login page shows {error} after I enter my password, on every {device}."),
    ("billing", "shipping", "Delivery fee", "I was charged a delivery fee of {amount} for a pick-up order."),
    ("account", "technical", "Two-factor broken", "The app never sends the two-factor code to my {device}."),
    ("shipping", "billing", "Paid, not sent", "I paid {amount} {days} days ago; the order is still pending."),
)
_VAGUE = (
    ("Help", "It does not work. Please help, this is urgent."),
    ("Problem", "Something is wrong since yesterday, can someone look at it?"),
    ("Question", "Hi, I have a question about my order and my account, please call me back."),
)
_OUT_OF_SCOPE = (
    ("forward_to_sales", "Partnership", "We are a reseller in {city} and want to discuss a partnership."),
    ("forward_to_sales", "Bulk pricing", "Do you offer volume discounts for 500 seats? We want a quote."),
    ("close_no_reply", "Job application", "I would like to apply for the support engineer job in {city}."),
    ("close_no_reply", "Newsletter", "Unsubscribe me from the newsletter. Also, great product!"),
)

_OPENERS = ("", "", "Hi, ", "Hello support, ", "Good morning. ", "Urgent: ", "Hi team, ")
_CLOSERS = ("", "", " Thanks.", " Thank you!", " Order {order}.", " Customer since {year}.",
            " Please answer quickly.", " Regards, {name}")
_NAMES = ("Ana", "Ben", "Chloe", "Dmitri", "Emeka", "Fatima", "Giulia", "Hiro", "Ines", "Jonas")

BASE_MIX = {"billing": 0.26, "technical": 0.30, "account": 0.22, "shipping": 0.22}
SHIFTED_MIX = {"billing": 0.18, "technical": 0.22, "account": 0.16, "shipping": 0.44}
KIND_SHARES = {"clear": 0.66, "misleading": 0.1, "ambiguous": 0.12, "vague": 0.04, "out_of_scope": 0.08}


@dataclass(frozen=True)
class Ticket:
    """One ticket as sent to the router, and what is true of it (never sent)."""

    ticket_id: str
    week: int
    subject: str
    body: str
    customer: dict[str, Any]
    kind: str
    truth: str
    """The final outcome: a team (decided by the router or, later, by a person) or an out-of-scope action."""
    options: tuple[str, ...] = field(default=TEAMS)

    def request(self) -> dict[str, Any]:
        """The router's request body."""
        return {"ticket_id": self.ticket_id,
                "ticket": {"subject": self.subject, "body": self.body, "customer": self.customer}}


def _fill(rng: random.Random, text: str) -> str:
    return text.format(**{k: rng.choice(v) for k, v in _SLOTS.items()})


def _dress(rng: random.Random, body: str) -> str:
    """A greeting and a sign-off around the body, as people write them."""
    closer = rng.choice(_CLOSERS).format(order=f"#{rng.randrange(100_000, 999_999)}",
                                         year=rng.randrange(2015, 2026), name=rng.choice(_NAMES))
    return f"{rng.choice(_OPENERS)}{body}{closer}"


def _customer(rng: random.Random) -> dict[str, Any]:
    cid = rng.randrange(10_000, 99_999)
    return {"id": cid, "plan": rng.choice(PLANS), "email": f"customer{cid}@example.com"}


def _one(rng: random.Random, ticket_id: str, week: int, mix: dict[str, float]) -> Ticket:
    kind = rng.choices(list(KIND_SHARES), weights=list(KIND_SHARES.values()))[0]
    team = rng.choices(list(mix), weights=list(mix.values()))[0]
    customer = _customer(rng)
    if kind == "clear":
        subject, body = rng.choice(_TEMPLATES[team])
        return Ticket(ticket_id, week, subject, _fill(rng, body), customer, kind, team)
    if kind == "misleading":
        truth, _looks_like, subject, body = rng.choice(_MISLEADING)
        return Ticket(ticket_id, week, subject, _fill(rng, body), customer, kind, truth)
    if kind == "ambiguous":
        other = rng.choice([t for t in TEAMS if t != team])
        (s1, b1), (_s2, b2) = rng.choice(_TEMPLATES[team]), rng.choice(_TEMPLATES[other])
        second = _fill(rng, b2)
        body = f"{_fill(rng, b1)} Also, {second[0].lower()}{second[1:]}"
        return Ticket(ticket_id, week, s1, body, customer, kind, team)
    if kind == "vague":
        subject, body = rng.choice(_VAGUE)
        return Ticket(ticket_id, week, subject, body, customer, kind, team)
    action, subject, body = rng.choice(_OUT_OF_SCOPE)
    return Ticket(ticket_id, week, subject, _fill(rng, body), customer, kind, action)


def synthetic(n: int, weeks: int, seed: int) -> list[Ticket]:
    """``n`` tickets spread evenly over ``weeks`` weeks; the last week (of two or more) shifts the mix."""
    rng = random.Random(seed)  # noqa: S311  (reproducible tickets, not a secret)
    tickets = []
    for i in range(n):
        week = i * weeks // n
        mix = SHIFTED_MIX if weeks > 1 and week == weeks - 1 else BASE_MIX
        ticket = _one(rng, f"T-{seed}-{i:05d}", week, mix)
        tickets.append(replace(ticket, body=_dress(rng, ticket.body)))
    return tickets
