"""Server benchmark: the scorer over HTTP at 1, 4 and 16 concurrent clients, beside the engine.

Three servers on the same CLINC150 decisions: the default mode serialized (one decision per model
call: the baseline), the default mode with cross-request batching (opt-in there: scores move), and the
batch-invariant mode (`SCORER_BATCH_INVARIANT=true`: cross-request batching on, scores unmoved).

Each server is a real `semif-shadow serve` process on loopback; clients are aiohttp coroutines in
this process, each sending its share of the decisions back to back. It prints decisions/s and
p50/p95/p99 latency per setting with the ratio to the serialized server at the same client count,
how far each server's logits are from the same decision scored alone in-process in the same mode,
and the raw prefill rate (one 512-token decode) with llama.cpp's repacked kernels on and off (what
the invariant mode gives up).

    .venv/bin/python bench/server.py                       # 64 decisions per setting, 1 repeat
    .venv/bin/python bench/server.py --decisions 96 --repeats 3
    .venv/bin/python bench/server.py --decisions 8 --skip-cross-batch   # serialized vs invariant only
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import aiohttp
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.workloads import MISSING, clinc_routing  # noqa: E402
from contracts.semif import parse_request  # noqa: E402
from scorer.engine import Engine  # noqa: E402
from scorer.settings import ScorerSettings  # noqa: E402

CLIENTS = (1, 4, 16)


def free_port() -> int:
    """A free loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def wait_ready(url: str) -> None:
    """Poll /ping until 200."""
    async with aiohttp.ClientSession() as session:
        for _ in range(3000):
            try:
                async with session.get(f"{url}/ping") as r:
                    if r.status == 200:
                        return
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.05)
    raise RuntimeError("server never became ready")


async def load(url: str, bodies: list[dict[str, Any]], clients: int) -> dict[str, Any]:
    """Send every body once with `clients` concurrent senders; return latencies and responses."""
    pending = list(enumerate(bodies))
    latencies: list[float] = []
    responses: dict[int, dict[str, Any]] = {}
    timeout = aiohttp.ClientTimeout(total=1800)  # a loaded machine queues 16 clients for minutes
    async with aiohttp.ClientSession(timeout=timeout) as session:

        async def sender() -> None:
            while pending:
                index, body = pending.pop()
                t = time.perf_counter()
                async with session.post(f"{url}/invocations", json=body) as r:
                    payload = await r.json()
                    if r.status != 200:
                        raise RuntimeError(f"{r.status}: {payload}")
                latencies.append(time.perf_counter() - t)
                responses[index] = payload

        started = time.perf_counter()
        await asyncio.gather(*(sender() for _ in range(clients)))
        wall = time.perf_counter() - started
    return {"wall": wall, "lat": latencies, "responses": [responses[i] for i in range(len(bodies))]}


SETTINGS: dict[str, dict[str, str]] = {
    "server (serialized)": {"SCORER_CROSS_BATCH": "false"},
    "server + cross-batch (default mode)": {"SCORER_CROSS_BATCH": "true"},
    "server, batch-invariant": {"SCORER_BATCH_INVARIANT": "true"},  # cross-request batching on by default
}


def run_server_setting(
    bodies: list[dict[str, Any]], extra_env: dict[str, str], threads: int
) -> dict[int, dict[str, Any]]:
    """Start one server process and measure each client count."""
    port = free_port()
    env = {**os.environ, "SCORER_N_THREADS": str(threads), "SCORER_QUEUE_SIZE": "64",
           "SCORER_CROSS_BATCH_MAX": "16", **extra_env}
    cli = str(Path(sys.executable).with_name("semif-shadow"))
    proc = subprocess.Popen([cli, "serve", "--port", str(port)], env=env, cwd=ROOT,  # noqa: S603
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        asyncio.run(wait_ready(url))
        asyncio.run(load(url, bodies[:4], 1))  # warm the prefix cache and the PMI baseline
        return {c: asyncio.run(load(url, bodies, c)) for c in CLIENTS}
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def run_in_process(bodies: list[dict[str, Any]], threads: int, *, invariant: bool = False) -> dict[str, Any]:
    """The same decisions through Engine.score in this process, one after another."""
    engine = Engine.from_settings(ScorerSettings(n_threads=threads, batch_invariant=invariant))
    try:
        for body in bodies[:4]:
            engine.score(parse_request(body))
        latencies, responses = [], []
        started = time.perf_counter()
        for body in bodies:
            t = time.perf_counter()
            responses.append(engine.score(parse_request(body)).to_json())
            latencies.append(time.perf_counter() - t)
        return {"wall": time.perf_counter() - started, "lat": latencies, "responses": responses}
    finally:
        engine.close()


def pct(values: list[float], q: float) -> float:
    """Percentile in ms."""
    return float(np.percentile(np.array(values) * 1000, q))


def deviation(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> np.ndarray:
    """Absolute logit differences between two runs over the same decisions."""
    return np.abs(np.array([[o["logit"] for o in r["options"]] for r in a])
                  - np.array([[o["logit"] for o in r["options"]] for r in b]))


def main() -> None:
    """Run and print the table."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--decisions", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--skip-cross-batch", action="store_true",
                        help="leave out the default mode's cross-batching server (scores move there)")
    args = parser.parse_args()
    settings = {k: v for k, v in SETTINGS.items() if not (args.skip_cross_batch and "default mode" in k)}
    decisions = clinc_routing()
    if decisions is None:
        print(f"{MISSING}: nothing to benchmark")
        return
    bodies = [d.request("pmi") for d in decisions[: args.decisions]]
    runs: dict[str, list[Any]] = {"engine": [], "engine, batch-invariant": [], **{k: [] for k in settings}}
    for _ in range(args.repeats):
        runs["engine"].append(run_in_process(bodies, args.threads))
        runs["engine, batch-invariant"].append(run_in_process(bodies, args.threads, invariant=True))
        for label, env in settings.items():
            runs[label].append(run_server_setting(bodies, env, threads=args.threads))
    report(args, runs)
    print()
    prefill(args.threads)


def prefill(threads: int, tokens: int = 512, repeats: int = 3) -> None:
    """Raw prefill: one decode of ``tokens`` tokens on a fresh cache, repacked kernels on and off."""
    from scorer.model_files import resolve_model_path  # noqa: PLC0415
    from scorer.runtime import LlamaRuntime, RuntimeConfig, Token  # noqa: PLC0415

    rates = {}
    for repack in (True, False):
        config = RuntimeConfig(model_path=resolve_model_path(None), n_threads=threads, repack=repack)
        rt = LlamaRuntime(config)
        try:
            ids = (rt.tokenize("The quick brown fox jumps over the lazy dog. " * 60))[:tokens]
            batch = [Token(t, i, (0,), logits=i == len(ids) - 1) for i, t in enumerate(ids)]
            times = []
            for _ in range(repeats):
                rt.clear()
                started = time.perf_counter()
                rt.decode(batch)
                times.append(time.perf_counter() - started)
            rates[repack] = len(batch) / statistics.median(times)
        finally:
            rt.close()
    print(f"raw prefill, one {tokens}-token decode (median of {repeats}): repacked kernels on "
          f"{rates[True]:.0f} tokens/s, off {rates[False]:.0f} tokens/s ({rates[False] / rates[True]:.2f}x)")


def report(args: argparse.Namespace, runs: dict[str, list[Any]]) -> None:
    """Print the side-by-side table (medians over repeats)."""
    med = statistics.median
    n = args.decisions
    base = med(n / r["wall"] for r in runs["engine"])
    print(f"{n} CLINC150 decisions (11 options, pmi) per setting; n_threads={args.threads}; "
          f"{args.repeats} repeat(s), medians; 'x serialized': against the serialized server, same clients")
    print()
    print("| setting | clients | decisions/s | p50 ms | p95 ms | p99 ms | x serialized |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label in ("engine", "engine, batch-invariant"):
        lat = runs[label][0]["lat"]
        rate = med(n / r["wall"] for r in runs[label])
        print(f"| in-process {label} | 1 | {rate:.2f} | {pct(lat, 50):.0f} | {pct(lat, 95):.0f} | "
              f"{pct(lat, 99):.0f} | {rate / base:.2f}x (vs engine) |")
    serial = {c: med(n / r[c]["wall"] for r in runs["server (serialized)"]) for c in CLIENTS}
    for label in (k for k in SETTINGS if k in runs):
        for c in CLIENTS:
            rate = med(n / r[c]["wall"] for r in runs[label])
            lat = runs[label][0][c]["lat"]
            print(f"| {label} | {c} | {rate:.2f} | {pct(lat, 50):.0f} | {pct(lat, 95):.0f} | "
                  f"{pct(lat, 99):.0f} | {rate / serial[c]:.2f}x |")
    print()
    for label in (k for k in SETTINGS if k in runs):
        own = "engine, batch-invariant" if "invariant" in label else "engine"
        solo = runs[own][0]["responses"]
        for c in CLIENTS:
            diff = deviation(runs[label][0][c]["responses"], solo)
            print(f"logit deviation vs in-process {own}, {label}, {c:>2} clients: "
                  f"median {np.median(diff):.2e}, max {diff.max():.2e} nats")


if __name__ == "__main__":
    main()
