"""Server benchmark: the scorer over HTTP at 1, 4 and 16 concurrent clients, beside the engine.

With and without cross-request batching, beside the in-process engine on the same CLINC150 decisions.

Each server is a real `semif-shadow serve` process on loopback; clients are aiohttp coroutines in
this process, each sending its share of the decisions back to back. It prints decisions/s and
p50/p95/p99 latency per setting, the ratio to the in-process engine, and how far cross-request
batching moves the logits from the same decision scored alone (the reason it is opt-in).

    .venv/bin/python bench/server.py                       # 64 decisions per setting, 1 repeat
    .venv/bin/python bench/server.py --decisions 96 --repeats 3
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

from bench.workloads import clinc_routing  # noqa: E402
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
    timeout = aiohttp.ClientTimeout(total=300)
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


def run_server_setting(
    bodies: list[dict[str, Any]], cross_batch: bool, threads: int
) -> dict[int, dict[str, Any]]:
    """Start one server process and measure each client count."""
    port = free_port()
    env = {**os.environ, "SCORER_N_THREADS": str(threads), "SCORER_QUEUE_SIZE": "64",
           "SCORER_CROSS_BATCH": "true" if cross_batch else "false", "SCORER_CROSS_BATCH_MAX": "16"}
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


def run_in_process(bodies: list[dict[str, Any]], threads: int) -> dict[str, Any]:
    """The same decisions through Engine.score in this process, one after another."""
    engine = Engine.from_settings(ScorerSettings(n_threads=threads))
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
    args = parser.parse_args()
    decisions = clinc_routing()
    if decisions is None:
        print("CLINC150 not found under ../shared/datasets/clinc150: nothing to benchmark")
        return
    bodies = [d.request("pmi") for d in decisions[: args.decisions]]
    runs: dict[str, list[Any]] = {"engine": [], "off": [], "on": []}
    for _ in range(args.repeats):
        runs["engine"].append(run_in_process(bodies, args.threads))
        runs["off"].append(run_server_setting(bodies, cross_batch=False, threads=args.threads))
        runs["on"].append(run_server_setting(bodies, cross_batch=True, threads=args.threads))
    report(args, runs)


def report(args: argparse.Namespace, runs: dict[str, list[Any]]) -> None:
    """Print the side-by-side table (medians over repeats)."""
    med = statistics.median
    n = args.decisions
    base = med(n / r["wall"] for r in runs["engine"])
    eng = runs["engine"][0]
    print(f"{n} CLINC150 decisions (11 options, pmi) per setting; n_threads={args.threads}; "
          f"{args.repeats} repeat(s), medians")
    print()
    print("| setting | clients | decisions/s | p50 ms | p95 ms | p99 ms | vs in-process |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(f"| in-process engine | 1 | {base:.2f} | {pct(eng['lat'], 50):.0f} | {pct(eng['lat'], 95):.0f} | "
          f"{pct(eng['lat'], 99):.0f} | 1.00x |")
    for mode, label in (("off", "server"), ("on", "server + cross-batch")):
        for c in CLIENTS:
            rate = med(n / r[c]["wall"] for r in runs[mode])
            lat = runs[mode][0][c]["lat"]
            print(f"| {label} | {c} | {rate:.2f} | {pct(lat, 50):.0f} | {pct(lat, 95):.0f} | "
                  f"{pct(lat, 99):.0f} | {rate / base:.2f}x |")
    print()
    solo = eng["responses"]
    for mode in ("off", "on"):
        for c in CLIENTS:
            diff = deviation(runs[mode][0][c]["responses"], solo)
            print(f"logit deviation vs in-process, {mode:>3} cross-batch, {c:>2} clients: "
                  f"median {np.median(diff):.2e}, max {diff.max():.2e} nats")


if __name__ == "__main__":
    main()
