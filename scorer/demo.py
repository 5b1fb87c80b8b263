"""`semif-shadow demo`: score a handful of sample support tickets with the embedded model.

Until the end-to-end shadow demo lands, this shows the scorer at work on the embedded defaults:
a routing decision with four teams, scored raw and with contextual (PMI) calibration.
"""

from __future__ import annotations

import time

import click

QUESTION = "Which team should handle this support ticket?"
OPTIONS = [
    {"id": "billing", "text": "Billing"},
    {"id": "technical", "text": "Technical support"},
    {"id": "shipping", "text": "Shipping and delivery"},
    {"id": "review", "text": "Needs human review"},
]
TICKETS = [
    ("t-1", "I was charged twice for my subscription this month, please refund one payment."),
    ("t-2", "The app crashes every time I open the settings page on my phone."),
    ("t-3", "My parcel was supposed to arrive on Monday and the tracking has not moved since."),
    ("t-4", "My invoice shows the wrong VAT number and amount."),
    ("t-5", "I cannot log in, the password reset email never arrives and the page shows error 500."),
]


@click.command("demo")
@click.option(
    "--normalization",
    type=click.Choice(["none", "per_token", "per_char", "pmi"]),
    default="pmi",
    show_default=True,
    help="Normalization used for the proposals.",
)
def demo(normalization: str) -> None:
    """Score sample support tickets with the embedded model and print the proposals.

    \b
    Example:
      semif-shadow demo --normalization per_token
    """
    from contracts.semif import parse_request  # noqa: PLC0415  (keep --help fast)
    from contracts.settings import build_settings  # noqa: PLC0415
    from scorer.engine import Engine  # noqa: PLC0415
    from scorer.settings import ScorerSettings  # noqa: PLC0415

    click.echo("Loading the scorer (embedded Gemma 3 270M Q4_K_M) ...")
    started = time.perf_counter()
    engine = Engine.from_settings(build_settings(ScorerSettings))
    ident = engine.identity
    click.echo(
        f"  {ident.name} {ident.quantization} sha256 {ident.sha256[:12]}... "
        f"on {ident.device}, {ident.n_threads} threads, loaded in {time.perf_counter() - started:.1f}s"
    )
    click.echo(f"\n{QUESTION}  (normalization: {normalization})\n")
    header = f"{'ticket':<6} {'proposal':<10} {'p':>5} {'cached':>6} {'ms':>6}  state"
    click.echo(header)
    click.echo("-" * len(header))
    try:
        for decision_id, text in TICKETS:
            request = parse_request(
                {
                    "decision_id": decision_id,
                    "decision_type": "support_routing",
                    "state": text,
                    "question": QUESTION,
                    "options": OPTIONS,
                    "scoring": {"normalization": normalization},
                }
            )
            response = engine.score(request)
            best = max(response.options, key=lambda o: o.probability)
            click.echo(
                f"{decision_id:<6} {best.id:<10} {best.probability:>5.2f} "
                f"{response.prompt.cached_tokens:>6} {response.timing_ms['score']:>6.0f}  "
                f"{text[:60]}"
            )
    finally:
        engine.close()
    click.echo(
        "\nEvery response also carries each option's probability and logit, the prompt identity and "
        "the pinned model identity: try `semif-shadow score --help`."
    )
