"""The logit memo (`SCORER_LOGIT_MEMO`) against none: two candidates that differ only in normalization.

The demo's champion (`pmi`) and challenger (`none`) score every ticket on one model. Per ticket, each
engine (its own llama.cpp context, the same settings but the memo) scores the ticket twice, `pmi` then
`none`, as the demo's scorer does; the two engines alternate which goes first from ticket to ticket, so
a loaded machine slows both alike. Tickets are the demo's own synthetic ones (`semif_shadow.demo.workload`),
with its question and options; the state is what the demo's catalog keeps (subject, body, plan).

Per engine: the median milliseconds per ticket (both calls), tokens decoded per ticket, memo hits; and,
on the memo engine, the largest difference of the second call's logits and probabilities from the
engine without the memo (the prefix cache's own tolerance is 1e-6).

    .venv/bin/python bench/memo.py --tickets 20
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contracts.semif import parse_request
from scorer.engine import Engine
from scorer.settings import ScorerSettings
from semif_shadow.demo.catalog import CANDIDATES, SUPPORT_OPTIONS
from semif_shadow.demo.workload import synthetic

QUESTION = "Which team should handle this support ticket?"  # the demo catalog's question


def ticket_requests(n: int, seed: int) -> list[list[Any]]:
    """Per ticket, its SemIf requests in the candidates' order (`pmi`, then `none`)."""
    out = []
    for t in synthetic(n, weeks=1, seed=seed)[:n]:
        state = {"subject": t.subject, "body": t.body, "customer": {"plan": t.customer.get("plan")}}
        out.append([parse_request({
            "decision_id": t.ticket_id, "decision_type": "ticket_routing", "state": state,
            "question": QUESTION, "options": [{"id": o["id"], "text": o["text"]} for o in SUPPORT_OPTIONS],
            "scoring": {"normalization": normalization},
        }) for normalization in CANDIDATES.values()])
    return out


def main() -> None:
    """Score the tickets on both engines, interleaved, and print one table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tickets", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads (the demo's default: 1)")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    settings = {memo: ScorerSettings(n_threads=args.threads, logit_memo=memo) for memo in (0, 256)}
    engines = {memo: Engine.from_settings(s) for memo, s in settings.items()}
    for engine in engines.values():
        engine.warm_up()
    seconds: dict[int, list[float]] = {m: [] for m in engines}
    tokens: dict[int, list[int]] = {m: [] for m in engines}
    logit_gap = prob_gap = 0.0
    for i, pair in enumerate(ticket_requests(args.tickets, args.seed)):
        answers: dict[int, list[Any]] = {}
        for memo in sorted(engines, reverse=bool(i % 2)):
            engine = engines[memo]
            before, started = engine.stats.tokens_computed, time.perf_counter()
            answers[memo] = [engine.score(request) for request in pair]
            seconds[memo].append(time.perf_counter() - started)
            tokens[memo].append(engine.stats.tokens_computed - before)
        off, on = answers[0][-1], answers[256][-1]
        logit_gap = max(logit_gap, float(np.abs([a.logit - b.logit for a, b in
                                                 zip(on.options, off.options, strict=True)]).max()))
        prob_gap = max(prob_gap, float(np.abs([a.probability - b.probability for a, b in
                                                zip(on.options, off.options, strict=True)]).max()))
    base = statistics.median(seconds[0])
    print(f"{args.tickets} tickets, {len(CANDIDATES)} candidates each ({', '.join(CANDIDATES.values())}), "
          f"{args.threads} thread(s)")
    print("| engine | ms/ticket (median) | x without memo | tokens decoded/ticket | memo hits |")
    print("|---|---:|---:|---:|---:|")
    for memo, engine in engines.items():
        median = statistics.median(seconds[memo])
        print(f"| memo {memo} | {median * 1000:.0f} | {base / median:.2f}x | "
              f"{statistics.median(tokens[memo]):.0f} | {engine.stats.memo_hits} |")
    print(f"second call against the engine without the memo: logits within {logit_gap:.2e}, "
          f"probabilities within {prob_gap:.2e}")
    for engine in engines.values():
        engine.close()


if __name__ == "__main__":
    main()
