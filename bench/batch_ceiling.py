"""The most cross-request batching can give on this machine: one decision's decode call against n in one.

A decision's uncached work, after its cached prefix, is one call (the batch-invariant mode's merged
layout, `scorer.merged`) of `--tokens` tokens with `--rows` logits rows (a CLINC150 decision: 18 tokens,
9 rows). Cross-request batching puts n such blocks in one call. This script times `llama_decode` alone
(no HTTP, no Python around it, no log-softmax), on the real model, for one block and for n blocks in
one call, each block on its own sequence after a shared `--prefix`-token prefix, alternating the shapes
so a loaded machine slows both alike. The ratio n x t(1) / t(n) is the ceiling of the throughput gain
batching can bring to the decode.

It also prints the arithmetic per call (multiply-accumulates of the layers per token, of the output
projection per logits row, from the model's shapes) and the rate reached, against one long prefill:
a small call that already runs near the long prefill's rate leaves batching little to gain.

    .venv/bin/python bench/batch_ceiling.py                    # repack off (the invariant mode's kernels)
    .venv/bin/python bench/batch_ceiling.py --repack --blocks 1 4 16
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scorer.model_files import runtime_config
from scorer.runtime import LlamaRuntime, Token
from scorer.settings import ScorerSettings

TOKEN = 1000
"""Any ordinary token id: the arithmetic does not depend on which."""


def layer_macs(runtime: LlamaRuntime) -> tuple[float, float]:
    """Multiply-accumulates per token through the layers, and per logits row of the output projection."""
    meta = runtime.meta
    arch = meta("general.architecture") or "gemma3"
    width = int(meta(f"{arch}.embedding_length") or 0)
    ffn = int(meta(f"{arch}.feed_forward_length") or 0)
    layers = int(meta(f"{arch}.block_count") or 0)
    heads = int(meta(f"{arch}.attention.head_count") or 0)
    kv_heads = int(meta(f"{arch}.attention.head_count_kv") or heads)
    head_dim = int(meta(f"{arch}.attention.key_length") or width // max(heads, 1))
    attention = width * head_dim * (2 * heads + 2 * kv_heads)  # q, o and k, v projections
    feed_forward = 3 * width * ffn  # gate, up, down
    return float(layers * (attention + feed_forward)), float(width * runtime.n_vocab)


def block(first_pos: int, seq: int, tokens: int, rows: int) -> list[Token]:
    """One decision's call: ``tokens`` tokens on sequence ``seq``, the last ``rows`` with logits."""
    return [Token(TOKEN, first_pos + i, (seq,), i >= tokens - rows) for i in range(tokens)]


def timed_call(runtime: LlamaRuntime, blocks: int, prefix: int, tokens: int, rows: int) -> float:
    """Seconds of one ``llama_decode`` holding ``blocks`` decisions' blocks; their cells removed after."""
    call = [tok for seq in range(1, blocks + 1) for tok in block(prefix, seq, tokens, rows)]
    started = time.perf_counter()
    runtime.decode(call)
    seconds = time.perf_counter() - started
    for seq in range(1, blocks + 1):
        runtime.seq_rm(seq, prefix, -1)
    return seconds


def main() -> None:
    """Time the shapes, alternating, and print the table."""
    args = parse_args()
    settings = ScorerSettings(batch_invariant=not args.repack, n_threads=args.threads)
    runtime = LlamaRuntime(runtime_config(settings))
    per_token, per_row = layer_macs(runtime)
    runtime.decode([Token(TOKEN, i, (0,), i == args.prefix - 1) for i in range(args.prefix)])
    for seq in range(1, max(args.blocks) + 1):
        runtime.seq_cp(0, seq, 0, args.prefix)
    times: dict[int, list[float]] = {n: [] for n in args.blocks}
    for _ in range(args.warmup):
        for n in args.blocks:
            timed_call(runtime, n, args.prefix, args.tokens, args.rows)
    for _ in range(args.repeats):
        for n in args.blocks:
            times[n].append(timed_call(runtime, n, args.prefix, args.tokens, args.rows))
    long_prefill = []
    for _ in range(3):
        started = time.perf_counter()
        runtime.decode([Token(TOKEN, args.prefix + i, (1,), i == args.long - 1) for i in range(args.long)])
        long_prefill.append(time.perf_counter() - started)
        runtime.seq_rm(1, args.prefix, -1)
    runtime.close()

    kernels = "repacked" if args.repack else "repack off (batch-invariant mode)"
    print(f"llama_decode after a {args.prefix}-token prefix, {args.threads} threads, kernels: {kernels}; "
          f"a decision = {args.tokens} tokens, {args.rows} logits rows; medians of {args.repeats}")
    print(f"model: {per_token / 1e6:.1f}M MACs per token in the layers, {per_row / 1e6:.1f}M per logits row")
    print("| decisions per call | ms per call | ms per decision | GMAC/s | x one per call |")
    print("|---:|---:|---:|---:|---:|")
    one = statistics.median(times[args.blocks[0]]) / args.blocks[0]
    for n in args.blocks:
        call = statistics.median(times[n])
        macs = n * (args.tokens * per_token + args.rows * per_row)
        print(f"| {n} | {call * 1e3:.1f} | {call / n * 1e3:.1f} | {macs / call / 1e9:.2f} | "
              f"{one / (call / n):.2f}x |")
    long = statistics.median(long_prefill)
    rate = (args.long * per_token + per_row) / long / 1e9
    print(f"long prefill: {args.long} tokens, 1 logits row, {long * 1e3:.0f} ms, {rate:.2f} GMAC/s "
          f"({args.long / long:.0f} tokens/s)")


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--blocks", type=int, nargs="+", default=[1, 4, 16],
                        help="decisions per call; the first is the baseline")
    parser.add_argument("--tokens", type=int, default=18, help="tokens of one decision's call")
    parser.add_argument("--rows", type=int, default=9, help="logits rows of one decision's call")
    parser.add_argument("--prefix", type=int, default=300, help="cached prefix tokens before the blocks")
    parser.add_argument("--long", type=int, default=512, help="tokens of the long prefill compared with")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repack", action="store_true", help="the default mode's repacked kernels")
    args = parser.parse_args()
    if args.blocks[-1] * args.tokens + args.prefix > 4096 or args.blocks[-1] * args.tokens > 512:
        parser.error("the largest call must fit n_batch 512 and n_ctx 4096")
    return args


if __name__ == "__main__":
    main()
