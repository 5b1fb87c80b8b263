"""Scorer benchmark: the engine vs brute force vs llama.cpp's raw prefill, on CLINC150 routing.

In one run, on the same decisions and the same model/context settings:

  (a) engine       `Engine.score` (shared prefix once, static prefix cached, options branched)
  (b) brute force  per option, prompt + option decoded from an empty cache in one call
  (c) raw prefill  llama.cpp decoding each decision's whole prompt in one call (tokens/s)

It prints decisions/s, p50/p95 latency, the engine's speed-up over brute force, the engine's rate on
the tokens it actually computed as a share of the raw prefill rate, accuracy per normalization
against the labels (beside always answering the most common label), and the runtime's spread: how
far the engine's logits sit from the single-call evaluation of prompt + option.

    .venv/bin/python bench/scorer.py                 # 150 decisions, brute force on 30, 3 repeats
    .venv/bin/python bench/scorer.py --decisions 40 --brute 10 --repeats 1   # quick
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.workloads import DOMAIN_TEXT, MISSING, Decision, clinc_routing
from contracts.semif import parse_request
from scorer.engine import Engine
from scorer.reference import single_call_logits
from scorer.runtime import Token
from scorer.settings import ScorerSettings


def run_engine(settings: ScorerSettings, decisions: list[Decision]) -> dict[str, Any]:
    """Score every decision with a fresh engine (first cold, then as in steady state).

    The runtime's decode is wrapped to time the llama_decode calls alone: (c2) is llama.cpp's own
    rate on exactly the engine's calls, so engine wall / decode time is the engine's overhead.
    """
    engine = Engine.from_settings(settings)
    decode_time = [0.0]
    plain_decode = engine.rt.decode

    def timed_decode(tokens: Any) -> None:
        t = time.perf_counter()
        plain_decode(tokens)
        decode_time[0] += time.perf_counter() - t

    engine.rt.decode = timed_decode  # type: ignore[method-assign]
    try:
        latencies, responses = [], []
        started = time.perf_counter()
        for d in decisions:
            t = time.perf_counter()
            responses.append(engine.score(parse_request(d.request("pmi"))).to_json())
            latencies.append(time.perf_counter() - t)
        wall = time.perf_counter() - started
        stats = engine.stats
        return {
            "wall": wall,
            "lat": latencies,
            "responses": responses,
            "decode": decode_time[0],
            "computed": stats.tokens_computed,
            "cached": stats.tokens_cached,
        }
    finally:
        engine.close()


def run_brute(engine: Engine, decisions: list[Decision]) -> dict[str, Any]:
    """Per option, prompt + option from an empty cache in one decode; returns timings and logits."""
    latencies, logits = [], []
    for d in decisions:
        request = parse_request(d.request())
        seg = engine.prepare(request.question, [o.text for o in request.options], request.state_text()).seg
        t = time.perf_counter()
        logits.append(single_call_logits(engine.rt, seg))
        latencies.append(time.perf_counter() - t)
    return {"wall": sum(latencies), "lat": latencies, "logits": logits}


def run_raw_prefill(engine: Engine, decisions: list[Decision]) -> dict[str, Any]:
    """Each decision's whole prompt decoded in one llama_decode from an empty cache."""
    tokens = 0
    elapsed = 0.0
    for d in decisions:
        request = parse_request(d.request())
        seg = engine.prepare(request.question, [o.text for o in request.options], request.state_text()).seg
        engine.rt.clear()
        t = time.perf_counter()
        engine.rt.decode([Token(tok, i, (0,), i == len(seg.prefix) - 1) for i, tok in enumerate(seg.prefix)])
        elapsed += time.perf_counter() - t
        tokens += len(seg.prefix)
    engine.rt.clear()
    return {"tokens": tokens, "wall": elapsed, "rate": tokens / elapsed}


def decode_by_batch_size(settings: ScorerSettings, repeats: int = 5) -> None:
    """Print llama_decode's time per call and tokens/s by batch size (logits on the last token only)."""
    engine = Engine.from_settings(settings)
    try:
        rt = engine.rt
        tokens = rt.tokenize("The customer writes again about the double charge on the invoice. " * 20)
        print("| tokens per llama_decode | ms per call | tokens/s |")
        print("|---:|---:|---:|")
        for n in (1, 4, 8, 16, 32, 64, 128, 256):
            times = []
            for _ in range(repeats):
                rt.clear()
                t = time.perf_counter()
                rt.decode([Token(tok, i, (0,), i == n - 1) for i, tok in enumerate(tokens[:n])])
                times.append(time.perf_counter() - t)
            ms = statistics.median(times) * 1000
            print(f"| {n} | {ms:.1f} | {n / ms * 1000:.0f} |")
        rt.clear()
    finally:
        engine.close()


def accuracy(responses: list[dict[str, Any]], decisions: list[Decision]) -> dict[str, float]:
    """Accuracy of the argmax under each normalization (all derived from the same logits)."""
    out: dict[str, float] = {}
    for norm in ("none", "per_token", "per_char", "pmi"):
        hits = 0
        for response, d in zip(responses, decisions, strict=True):
            opts = response["options"]
            if norm == "pmi":
                scores = [o["probability"] for o in opts]
            elif norm == "per_token":
                scores = [o["logit"] / o["tokens"] for o in opts]
            elif norm == "per_char":
                scores = [o["logit"] / len(DOMAIN_TEXT[o["id"]]) for o in opts]
            else:
                scores = [o["logit"] for o in opts]
            hits += opts[int(np.argmax(scores))]["id"] == d.label
        out[norm] = hits / len(decisions)
    return out


def pct(values: list[float], q: float) -> float:
    """Percentile in milliseconds."""
    return float(np.percentile(np.array(values) * 1000, q))


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--decisions", type=int, default=150, help="CLINC150 decisions (12/domain ratio kept)"
    )
    parser.add_argument("--brute", type=int, default=30, help="decisions for the brute-force method")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each method; medians reported")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-options", choices=["on", "off"], default="on")
    parser.add_argument("--batch-sizes", action="store_true", help="only time llama_decode by batch size")
    args = parser.parse_args()
    if args.batch_sizes:
        decode_by_batch_size(ScorerSettings(n_threads=args.threads))
        return
    per_domain = max(1, round(args.decisions * 12 / 150))
    decisions = clinc_routing(
        n_in_scope_per_domain=per_domain, n_oos=max(1, args.decisions - 10 * per_domain)
    )
    if decisions is None:
        print(f"{MISSING}: nothing to benchmark")
        return
    settings = ScorerSettings(n_threads=args.threads, batch_options=args.batch_options == "on")
    brute_set = decisions[: args.brute]

    engine_runs = [run_engine(settings, decisions) for _ in range(args.repeats)]
    helper = Engine.from_settings(settings)
    try:
        brute_runs = [run_brute(helper, brute_set) for _ in range(args.repeats)]
        raw_runs = [run_raw_prefill(helper, decisions) for _ in range(args.repeats)]
        engine_on_brute_set = [r["responses"][: args.brute] for r in engine_runs]
    finally:
        helper.close()
    report(args, decisions, engine_runs, brute_runs, raw_runs, engine_on_brute_set, settings)


def report(  # noqa: PLR0913, PLR0917  (one table from every measurement)
    args: argparse.Namespace,
    decisions: list[Decision],
    engine_runs: list[dict[str, Any]],
    brute_runs: list[dict[str, Any]],
    raw_runs: list[dict[str, Any]],
    engine_on_brute_set: list[list[dict[str, Any]]],
    settings: ScorerSettings,
) -> None:
    """Print the side-by-side table."""
    med = statistics.median
    eng_dps = med(len(decisions) / r["wall"] for r in engine_runs)
    brute_dps = med(args.brute / r["wall"] for r in brute_runs)
    raw_rate = med(r["rate"] for r in raw_runs)
    eng_tok_rate = med(r["computed"] / r["wall"] for r in engine_runs)
    decode_rate = med(r["computed"] / r["decode"] for r in engine_runs)
    eng_lat = engine_runs[len(engine_runs) // 2]["lat"]
    brute_lat = brute_runs[len(brute_runs) // 2]["lat"]
    cached_share = med(r["cached"] / (r["cached"] + r["computed"]) for r in engine_runs)
    diffs = np.abs(
        np.array([[o["logit"] for o in resp["options"]] for resp in engine_on_brute_set[0]])
        - np.array(brute_runs[0]["logits"])
    )
    acc = accuracy(engine_runs[0]["responses"], decisions)
    common = Counter(d.label for d in decisions).most_common(1)[0]

    print(
        f"CLINC150 domain routing: {len(decisions)} decisions, 11 options; brute force on the first "
        f"{args.brute}; {args.repeats} repeats (medians); n_threads={settings.n_threads}, "
        f"batch_options={settings.batch_options}"
    )
    print()
    print("| method | decisions/s | p50 ms | p95 ms | tokens/s | vs brute force |")
    print("|---|---:|---:|---:|---:|---:|")
    print(
        f"| (a) engine | {eng_dps:.2f} | {pct(eng_lat, 50):.0f} | {pct(eng_lat, 95):.0f} | "
        f"{eng_tok_rate:.0f} computed | {eng_dps / brute_dps:.1f}x |"
    )
    print(
        f"| (b) brute force per option | {brute_dps:.2f} | {pct(brute_lat, 50):.0f} | "
        f"{pct(brute_lat, 95):.0f} | | 1.0x |"
    )
    print(f"| (c) raw llama.cpp prefill (whole prompt, one call) | | | | {raw_rate:.0f} | |")
    print(f"| (c2) llama_decode alone on the engine's own calls | | | | {decode_rate:.0f} | |")
    print()
    print(
        f"engine tokens: {cached_share:.0%} of prompt tokens reused from the prefix cache; rate on the "
        f"tokens it computed = {eng_tok_rate / raw_rate:.0%} of (c) raw whole-prompt prefill, "
        f"{eng_tok_rate / decode_rate:.0%} of (c2) llama_decode on the same calls"
    )
    print(
        f"accuracy: none {acc['none']:.1%}, per_token {acc['per_token']:.1%}, "
        f"per_char {acc['per_char']:.1%}, pmi {acc['pmi']:.1%}; "
        f"always '{common[0]}' {common[1] / len(decisions):.1%}; chance {1 / 11:.1%}"
    )
    print(
        f"spread vs single-call prompt+option: median {np.median(diffs):.4f} nats, "
        f"max {diffs.max():.4f} nats ({diffs.size} option scores)"
    )


if __name__ == "__main__":
    main()
