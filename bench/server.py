"""Server benchmark: the scorer over HTTP at 1, 4, 16 and 64 concurrent clients, beside the engine.

Three servers on the same CLINC150 decisions: the default mode serialized (one decision per model
call: the baseline), the default mode with cross-request batching (opt-in there: scores move), and the
batch-invariant mode (`SCORER_BATCH_INVARIANT=true`: cross-request batching on, scores unmoved).

Each server is a real `semif-shadow serve` process on loopback; clients are aiohttp coroutines in
this process, each sending its share of the decisions back to back. It prints decisions/s,
p50/p95/p99 latency, tokens decoded per second and decisions per model round (from the server's
`/metrics`) per setting with the ratio to the serialized server at the same client count, how far each
server's logits are from the same decision scored alone in-process in the same mode, and the raw
prefill rate (one 512-token decode) with llama.cpp's repacked kernels on and off (what the invariant
mode gives up), on the same device as the servers.

    .venv/bin/python bench/server.py                       # 64 decisions per setting, 1 repeat
    .venv/bin/python bench/server.py --decisions 96 --repeats 3
    .venv/bin/python bench/server.py --decisions 8 --skip-cross-batch   # serialized vs invariant only
    .venv/bin/python bench/server.py --gpu-layers -1 --skip-invariant --n-batch 2048   # a CUDA build
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

CLIENTS = (1, 4, 16, 64)
ENGINES: list[str] = ["engine", "engine, batch-invariant"]
COUNTERS = ("semif_tokens_computed_total", "semif_batch_decisions_sum", "semif_batch_decisions_count",
            "process_cpu_seconds_total")


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


async def counters(session: aiohttp.ClientSession, url: str) -> dict[str, float]:
    """The server's token and batch counters (`COUNTERS`) from its `/metrics`."""
    async with session.get(f"{url}/metrics") as r:
        text = await r.text()
    found = dict(line.rsplit(" ", 1) for line in text.splitlines() if line.startswith(COUNTERS))
    return {name: float(found.get(name, 0.0)) for name in COUNTERS}


async def load(url: str, bodies: list[dict[str, Any]], clients: int) -> dict[str, Any]:
    """Send every body once with `clients` concurrent senders; return latencies, responses, counters."""
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

        before = await counters(session, url)
        started = time.perf_counter()
        await asyncio.gather(*(sender() for _ in range(clients)))
        wall = time.perf_counter() - started
        after = await counters(session, url)
    moved = {name: after[name] - before[name] for name in COUNTERS}
    return {"wall": wall, "lat": latencies, "responses": [responses[i] for i in range(len(bodies))],
            "tokens": moved[COUNTERS[0]], "per_round": moved[COUNTERS[1]] / max(moved[COUNTERS[2]], 1),
            "cpu": moved[COUNTERS[3]]}


SETTINGS: dict[str, dict[str, str]] = {
    "server (serialized)": {"SCORER_CROSS_BATCH": "false"},
    "server + cross-batch (default mode)": {"SCORER_CROSS_BATCH": "true"},
    "server, batch-invariant": {"SCORER_BATCH_INVARIANT": "true"},  # cross-request batching on by default
}


def run_server_setting(
    bodies: list[dict[str, Any]], extra_env: dict[str, str], args: argparse.Namespace
) -> dict[int, dict[str, Any]]:
    """Start one server process and measure each client count."""
    port = free_port()
    env = {**os.environ, **engine_env(args), "SCORER_QUEUE_SIZE": str(max(64, *args.clients)), **extra_env}
    cli = str(Path(sys.executable).with_name("semif-shadow"))
    proc = subprocess.Popen([cli, "serve", "--port", str(port)], env=env, cwd=ROOT,  # noqa: S603
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        asyncio.run(wait_ready(url))
        asyncio.run(load(url, bodies[:4], 1))  # warm the prefix cache and the PMI baseline
        return {c: asyncio.run(load(url, bodies, c)) for c in args.clients}
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def engine_env(args: argparse.Namespace) -> dict[str, str]:
    """The SCORER_* variables of this run's engines: threads, GPU layers, batch and cross-batch sizes."""
    env = {"SCORER_N_THREADS": str(args.threads), "SCORER_N_GPU_LAYERS": str(args.gpu_layers)}
    if args.n_batch is not None:
        env["SCORER_N_BATCH"] = str(args.n_batch)
    if args.cross_batch_max is not None:
        env["SCORER_CROSS_BATCH_MAX"] = str(args.cross_batch_max)
    return env


def run_in_process(
    bodies: list[dict[str, Any]], args: argparse.Namespace, *, invariant: bool = False
) -> dict[str, Any]:
    """The same decisions through Engine.score in this process, one after another."""
    overrides = {k.removeprefix("SCORER_").lower(): v for k, v in engine_env(args).items()}
    engine = Engine.from_settings(ScorerSettings.model_validate({**overrides, "batch_invariant": invariant}))
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
    parser.add_argument("--clients", type=int, nargs="+", default=list(CLIENTS),
                        help="concurrent clients, one measurement each (default: %(default)s)")
    parser.add_argument("--gpu-layers", type=int, default=0,
                        help="SCORER_N_GPU_LAYERS of every engine and of the prefill (-1: all; CUDA build)")
    parser.add_argument("--n-batch", type=int, default=None, help="SCORER_N_BATCH (default: the setting's)")
    parser.add_argument("--cross-batch-max", type=int, default=None,
                        help="SCORER_CROSS_BATCH_MAX (default: the setting's)")
    parser.add_argument("--skip-cross-batch", action="store_true",
                        help="leave out the default mode's cross-batching server (scores move there)")
    parser.add_argument("--skip-invariant", action="store_true",
                        help="leave out the batch-invariant engine and server (refused where a GPU is seen)")
    args = parser.parse_args()
    settings = {k: v for k, v in SETTINGS.items()
                if not (args.skip_cross_batch and "default mode" in k)
                and not (args.skip_invariant and "invariant" in k)}
    decisions = clinc_routing()
    if decisions is None:
        print(f"{MISSING}: nothing to benchmark")
        return
    bodies = [d.request("pmi") for d in decisions[: args.decisions]]
    engines = ENGINES[:1] if args.skip_invariant else ENGINES
    runs: dict[str, list[Any]] = {**{k: [] for k in engines}, **{k: [] for k in settings}}
    for _ in range(args.repeats):
        for label in engines:
            runs[label].append(run_in_process(bodies, args, invariant="invariant" in label))
        for label, env in settings.items():
            runs[label].append(run_server_setting(bodies, env, args))
    report(args, runs)
    print()
    prefill(args.threads, args.gpu_layers)


def prefill(threads: int, gpu_layers: int = 0, tokens: int = 512, repeats: int = 3) -> None:
    """Raw prefill: one decode of ``tokens`` tokens on a fresh cache, repacked kernels on and off."""
    from scorer.model_files import resolve_model_path  # noqa: PLC0415
    from scorer.runtime import LlamaRuntime, RuntimeConfig, Token  # noqa: PLC0415

    rates = {}
    for repack in (True, False):
        config = RuntimeConfig(model_path=resolve_model_path(None), n_threads=threads, repack=repack,
                               n_gpu_layers=gpu_layers)
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
    print(f"raw prefill, one {tokens}-token decode (median of {repeats}, n_gpu_layers={gpu_layers}): "
          f"repacked on {rates[True]:.0f} tokens/s, off {rates[False]:.0f} tokens/s "
          f"({rates[False] / rates[True]:.2f}x)")


def report(args: argparse.Namespace, runs: dict[str, list[Any]]) -> None:
    """Print the side-by-side table (medians over repeats)."""
    med = statistics.median
    n = args.decisions
    base = med(n / r["wall"] for r in runs["engine"])
    model = runs["engine"][0]["responses"][0]["model"]
    print(f"{n} CLINC150 decisions (11 options, pmi) per setting; device {model['device']}, "
          f"n_gpu_layers={model['n_gpu_layers']}, n_threads={args.threads}, n_batch={model['n_batch']}; "
          f"{args.repeats} repeat(s), medians; 'x serialized': against the serialized server, same clients")
    print()
    print("| setting | clients | decisions/s | p50 ms | p95 ms | p99 ms | tokens/s | per round "
          "| server CPU ms a decision | x serialized |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label in (k for k in ENGINES if k in runs):
        lat = runs[label][0]["lat"]
        rate = med(n / r["wall"] for r in runs[label])
        print(f"| in-process {label} | 1 | {rate:.2f} | {pct(lat, 50):.0f} | {pct(lat, 95):.0f} | "
              f"{pct(lat, 99):.0f} | | 1 | | {rate / base:.2f}x (vs engine) |")
    serial = {c: med(n / r[c]["wall"] for r in runs["server (serialized)"]) for c in args.clients}
    for label in (k for k in SETTINGS if k in runs):
        for c in args.clients:
            rate = med(n / r[c]["wall"] for r in runs[label])
            tokens = med(r[c]["tokens"] / r[c]["wall"] for r in runs[label])
            per_round = med(r[c]["per_round"] for r in runs[label])
            cpu = med(r[c]["cpu"] * 1000 / n for r in runs[label])
            lat = runs[label][0][c]["lat"]
            print(f"| {label} | {c} | {rate:.2f} | {pct(lat, 50):.0f} | {pct(lat, 95):.0f} | "
                  f"{pct(lat, 99):.0f} | {tokens:.0f} | {per_round:.1f} | {cpu:.0f} | "
                  f"{rate / serial[c]:.2f}x |")
    print()
    for label in (k for k in SETTINGS if k in runs):
        own = "engine, batch-invariant" if "invariant" in label else "engine"
        solo = runs[own][0]["responses"]
        for c in args.clients:
            diff = deviation(runs[label][0][c]["responses"], solo)
            print(f"logit deviation vs in-process {own}, {label}, {c:>2} clients: "
                  f"median {np.median(diff):.2e}, max {diff.max():.2e} nats")


if __name__ == "__main__":
    main()
