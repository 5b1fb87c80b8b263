"""The same CLINC150 decisions scored by the SemIf engine and by the `chat` backend, side by side.

SemIf: this project's engine in process (the embedded Gemma 3 270M, PMI normalization). Chat:
llama-cpp-python's OpenAI-compatible server (`python -m llama_cpp.server`, the same GGUF, `--chat_format
gemma`) on loopback, through `shadow.backends.chat.ChatBackend` in `grammar` mode with `top_logprobs` 20.
Prints accuracy against the labels, ECE (15 equal-width bins of the top probability; for chat only over
the decisions whose probabilities came from log-probabilities), p50 and p95 latency, and the chat
figures' ratio to SemIf's in the same run. Skips cleanly without the dataset.

    python -P bench/chat_vs_semif.py --per-domain 1 --oos 1
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.workloads import MISSING, Decision, clinc_routing
from contracts.semif import parse_request
from scorer.engine import Engine
from scorer.model_files import embedded_default
from scorer.settings import ScorerSettings
from shadow.backends.chat import ChatBackend

BINS = 15


def ece(rows: list[tuple[list[float], int]]) -> float:
    """Expected calibration error of the top probability (equal-width bins)."""
    bins: dict[int, list[tuple[float, bool]]] = {}
    for probs, label in rows:
        top = max(range(len(probs)), key=probs.__getitem__)
        bins.setdefault(min(int(probs[top] * BINS), BINS - 1), []).append((probs[top], top == label))
    return sum(
        len(b) * abs(statistics.fmean(p for p, _ in b) - statistics.fmean(c for _, c in b))
        for b in bins.values()
    ) / max(1, len(rows))


def semif(decisions: list[Decision]) -> list[tuple[list[float], float]]:
    """Probabilities and seconds per decision from the in-process engine."""
    engine = Engine.from_settings(ScorerSettings())
    try:
        out = []
        for d in decisions:
            started = time.perf_counter()
            response = engine.score(parse_request(d.request("pmi"))).to_json()
            out.append(([o["probability"] for o in response["options"]], time.perf_counter() - started))
        return out
    finally:
        engine.close()


async def chat(url: str, decisions: list[Decision]) -> list[tuple[list[float], float, str]]:
    """Probabilities, seconds and where the numbers came from, per decision, through the chat backend."""
    backend = ChatBackend(url, None, 16, "grammar", 20)
    await backend.start()
    try:
        out = []
        for d in decisions:
            started = time.perf_counter()
            result = await backend.score(d.request(), 600)
            out.append((result.probabilities, time.perf_counter() - started, result.prompt["builder"]))
        return out
    finally:
        await backend.close()


def serve(port: int) -> subprocess.Popen[bytes]:
    """`python -m llama_cpp.server` on loopback, ready."""
    proc = subprocess.Popen(  # noqa: S603  (this interpreter, fixed arguments)
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(embedded_default()),
            "--chat_format",
            "gemma",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2):
                return proc
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise SystemExit("llama_cpp.server did not start")


def row(
    name: str, rows: list[tuple[list[float], int]], seconds: list[float], base: dict[str, float]
) -> dict[str, float]:
    """Print one side's line; return its figures."""
    accuracy = statistics.fmean(max(range(len(p)), key=p.__getitem__) == label for p, label in rows)
    figures = {
        "accuracy": accuracy,
        "ece": ece(rows) if rows else float("nan"),
        "p50": statistics.median(seconds),
        "p95": sorted(seconds)[int(0.95 * (len(seconds) - 1))],
    }
    ratio = figures["p50"] / base["p50"] if base else 1.0
    print(
        f"{name:>22} {len(rows):>5} {accuracy:>8.2f} {figures['ece']:>6.3f} {figures['p50']:>7.2f} "
        f"{figures['p95']:>7.2f} {ratio:>8.2f}"
    )
    return figures


def main() -> None:
    """Score the sample both ways and print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--per-domain", type=int, default=1, help="in-scope decisions per domain (10 domains)"
    )
    parser.add_argument("--oos", type=int, default=1, help="out-of-scope decisions")
    parser.add_argument("--limit", type=int, default=0, help="score only the first N of the sample (0: all)")
    parser.add_argument("--port", type=int, default=18766)
    args = parser.parse_args()
    decisions = clinc_routing(args.per_domain, args.oos)
    if decisions is None:
        print(f"{MISSING}: skipped")
        return
    decisions = decisions[: args.limit or None]
    ids = [o["id"] for o in decisions[0].request()["options"]]
    labels = [ids.index(d.label) for d in decisions]
    semif_out = semif(decisions)
    proc = serve(args.port)
    try:
        chat_out = asyncio.run(chat(f"http://127.0.0.1:{args.port}", decisions))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print(f"{'side':>22} {'n':>5} {'accuracy':>8} {'ECE':>6} {'p50 s':>7} {'p95 s':>7} {'p50 x':>8}")
    base = row(
        "semif (pmi)",
        [(p, y) for (p, _), y in zip(semif_out, labels, strict=True)],
        [s for _, s in semif_out],
        {},
    )
    row(
        "chat grammar, all",
        [(p, y) for (p, _, _), y in zip(chat_out, labels, strict=True)],
        [s for _, s, _ in chat_out],
        base,
    )
    sourced = [(p, y) for (p, _, b), y in zip(chat_out, labels, strict=True) if b.endswith(";logprobs")]
    row(
        "chat, from logprobs",
        sourced,
        [s for _, s, b in chat_out if b.endswith(";logprobs")] or [float("nan")],
        base,
    )
    print(f"chat rows with probabilities from logprobs: {len(sourced)} of {len(chat_out)} (the rest one-hot)")


if __name__ == "__main__":
    main()
