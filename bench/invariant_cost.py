"""Where the batch-invariant mode's time goes: pad tokens, pad rows, kernels and calls per decision.

Engines side by side on the same CLINC150 decisions (11 options, `pmi`), each with its own llama.cpp
context, the variants interleaved decision by decision (a loaded machine slows all of them alike):

    default               the default mode: repacked kernels, tokens as they fall, suffix call + options call
    repack off            the same calls, repacked kernels off
    + aligned segments    ... every segment on a cell that is a multiple of 8 (pad tokens before it)
    + >= 8 logits rows    ... and at least 8 logits rows per call: the layout of the first invariant mode
    merged, repacked      one call per decision (suffix + branches, `scorer.merged`) on the repacked kernels
    invariant (merged)    the batch-invariant mode as it is: repack off, one merged call per decision

Per decision it counts llama_decode calls, tokens decoded, pad tokens before segments and pad rows
(tokens of the pads' sequence without and with logits), logits rows, and times `Engine.score` and
`llama_decode` alone (medians). Then, for the two invariant layouts, the same decisions in one
`score_many` call (cross-request batches), against the default engine one at a time, and the largest
logit change of the batched scores against the same decisions scored alone (0: invariant).

    .venv/bin/python bench/invariant_cost.py --decisions 16
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.workloads import MISSING, clinc_routing
from contracts.semif import ScoreRequest, parse_request
from scorer.cells import CELL_ALIGN, Layout
from scorer.engine import Engine
from scorer.model_files import runtime_config
from scorer.runtime import LlamaRuntime, RuntimeConfig, Token
from scorer.settings import ScorerSettings

if TYPE_CHECKING:
    from collections.abc import Sequence


@dataclass
class Calls:
    """What the decode calls held since the last `take`."""

    calls: int = 0
    tokens: int = 0
    pads: int = 0
    pad_rows: int = 0
    rows: int = 0
    seconds: float = 0.0


class CountingRuntime(LlamaRuntime):
    """A real runtime that counts and times what each `decode` holds."""

    def __init__(self, config: RuntimeConfig) -> None:
        super().__init__(config)
        self.counts = Calls()

    def decode(self, tokens: Sequence[Token]) -> None:
        """Decode, counting tokens, pads (the last sequence) and logits rows."""
        pad_seq = self.config.n_seq_max - 1
        c = self.counts
        c.calls += 1
        c.tokens += len(tokens)
        c.pads += sum(1 for t in tokens if t.seq_ids == (pad_seq,) and not t.logits)
        c.pad_rows += sum(1 for t in tokens if t.seq_ids == (pad_seq,) and t.logits)
        c.rows += sum(1 for t in tokens if t.logits)
        started = time.perf_counter()
        super().decode(tokens)
        c.seconds += time.perf_counter() - started

    def take(self) -> Calls:
        """The counts since the last take."""
        taken, self.counts = self.counts, Calls()
        return taken


def make(  # noqa: PLR0913  (one keyword per thing a variant changes)
    threads: int, *, repack: bool, invariant: bool = False, align: int = 1, min_outputs: int = 0,
    merged: bool = False,
) -> Engine:
    """An engine on a counting runtime: the real mode (``invariant``) or a layout on other kernels."""
    settings = ScorerSettings(n_threads=threads, batch_invariant=invariant)
    rt = CountingRuntime(dataclasses.replace(runtime_config(settings), repack=repack))  # the engine's context
    engine = Engine(rt, settings)
    if align > 1:  # a measurement's variant: another mode's layout (and calls, ``merged``) on these kernels
        engine.invariant = merged
        engine.layout = engine.preparer.layout = Layout(align, pad_seq=rt.config.n_seq_max - 1,
                                                        min_outputs=min_outputs)
    return engine


VARIANTS: dict[str, dict[str, Any]] = {
    "default": {"repack": True},
    "repack off": {"repack": False},
    "+ aligned segments": {"repack": False, "align": CELL_ALIGN},
    "+ >= 8 logits rows (first invariant layout)": {"repack": False, "align": CELL_ALIGN, "min_outputs": 8},
    "merged, repacked kernels (not invariant)": {"repack": True, "align": CELL_ALIGN, "min_outputs": 8,
                                                  "merged": True},
    "invariant (merged)": {"repack": False, "invariant": True},
}
BATCHED = ("+ >= 8 logits rows (first invariant layout)", "invariant (merged)")


def logits(responses: Sequence[Any]) -> np.ndarray:
    """The options' logits of each response, one row per decision."""
    return np.array([[o.logit for o in r.options] for r in responses])


def main() -> None:
    """Measure and print both tables."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--decisions", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3, help="rounds of the batched comparison")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    decisions = clinc_routing()
    if decisions is None:
        print(f"{MISSING}: nothing to benchmark")
        return
    requests = [parse_request(d.request("pmi")) for d in decisions[: 4 + args.decisions]]
    warm, requests = requests[:4], requests[4:]
    engines = {label: make(args.threads, **kw) for label, kw in VARIANTS.items()}
    try:
        for engine in engines.values():
            for r in warm:
                engine.score(r)
            runtime(engine).take()
        solo(engines, requests)
        batched(engines, requests, args.repeats)
    finally:
        for engine in engines.values():
            engine.close()


def runtime(engine: Engine) -> CountingRuntime:
    """The engine's counting runtime."""
    assert isinstance(engine.rt, CountingRuntime)
    return engine.rt


def solo(engines: dict[str, Engine], requests: Sequence[ScoreRequest]) -> None:
    """Each decision scored alone by every variant in turn; medians per decision."""
    wall: dict[str, list[float]] = {k: [] for k in engines}
    per: dict[str, list[Calls]] = {k: [] for k in engines}
    for r in requests:
        for label, engine in engines.items():
            started = time.perf_counter()
            engine.score(r)
            wall[label].append(time.perf_counter() - started)
            per[label].append(runtime(engine).take())
    base = statistics.median(wall["default"])
    print(f"{len(requests)} CLINC150 decisions scored alone (warm prefix cache), medians per decision")
    print()
    print("| variant | ms/decision | x default | decode ms | calls | tokens | pad tokens | pad rows | "
          "logits rows |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label in engines:
        c = per[label]
        ms = statistics.median(wall[label])

        def med(f: str, c: list[Calls] = c) -> float:
            return statistics.median(getattr(x, f) for x in c)

        print(f"| {label} | {ms * 1000:.0f} | {base / ms:.2f}x | {med('seconds') * 1000:.0f} | "
              f"{med('calls'):.0f} | {med('tokens'):.0f} | {med('pads'):.0f} | {med('pad_rows'):.0f} | "
              f"{med('rows'):.0f} |")


def batched(engines: dict[str, Engine], requests: Sequence[ScoreRequest], repeats: int) -> None:
    """All decisions in one `score_many` per invariant layout, against the default engine one by one."""
    n = len(requests)
    wall: dict[str, list[float]] = {"default, one at a time": [], **{k: [] for k in BATCHED}}
    calls: dict[str, Calls] = {}
    worst: dict[str, float] = {}
    for _ in range(repeats):
        started = time.perf_counter()
        for r in requests:
            engines["default"].score(r)
        wall["default, one at a time"].append(time.perf_counter() - started)
        for label in BATCHED:
            engine = engines[label]
            alone = logits([engine.score(r) for r in requests])
            runtime(engine).take()
            started = time.perf_counter()
            together = engine.score_many(requests)
            wall[label].append(time.perf_counter() - started)
            calls[label] = runtime(engine).take()
            worst[label] = float(np.abs(logits(together) - alone).max())
    base = n / statistics.median(wall["default, one at a time"])
    print()
    print(f"the same {n} decisions in one score_many (cross-request batches), median of {repeats}")
    print()
    print("| variant | decisions/s | x default one at a time | calls | tokens | pad tokens | pad rows | "
          "max logit change vs alone |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print(f"| default, one at a time | {base:.2f} | 1.00x | | | | | |")
    for label in BATCHED:
        rate, c = n / statistics.median(wall[label]), calls[label]
        print(f"| {label} | {rate:.2f} | {rate / base:.2f}x | {c.calls} | {c.tokens} | {c.pads} | "
              f"{c.pad_rows} | {worst[label]:.2e} |")


if __name__ == "__main__":
    main()
