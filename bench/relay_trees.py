"""The sidecar's proxy rows on several source trees, alternating in one run on one machine.

A figure that moved between two measurements may be the code or the machine. This
script answers which: it starts ``bench/sidecar.py``'s stack once (nginx upstream, the ~1 ms
fault-injecting scorer) and, for each run, a fresh sidecar from each tree in turn, loaded by the same
paced wrk schedule, so every tree sees the same machine state. Trees are checkouts, for example::

    git worktree add /tmp/before REV
    .venv/bin/python bench/relay_trees.py --tree main=. --tree before=/tmp/before --runs 3
    .venv/bin/python bench/relay_trees.py --tree main=. --in-process   # the relay on the sidecar's loop

Each sidecar runs with ``PYTHONPATH`` set to its tree (this checkout's ``.venv``: the dependencies of
the trees must match it). Trees older than the ``semif_shadow`` entry layer start from
``shadow.cli``. Prints p50/p99 medians and the ratio to the first tree.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench.sidecar as stack_mod
from bench.sidecar import Stack, metrics, wrk

_start = stack_mod.start


Starter = Callable[[list[str], dict[str, str] | None], subprocess.Popen[bytes]]


def _tree_start(tree: Path) -> Starter:
    """``bench.sidecar.start`` for a sidecar of ``tree`` (``-P``: the working folder must not shadow it)."""
    entry = "semif_shadow.cli" if (tree / "semif_shadow" / "cli.py").exists() else "shadow.cli"

    def start(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
        if args and str(args[0]).endswith("semif-shadow"):
            args = [stack_mod.PY, "-P", "-c",
                    f"import sys; from {entry} import main; sys.argv[0] = 'semif-shadow'; main()", *args[1:]]
            env = {**os.environ, **(env or {}), "PYTHONPATH": str(tree)}
            # In the tree's folder: older relays start as ``python -m``, importing from the working folder.
            return subprocess.Popen(args, cwd=tree, env=env,  # noqa: S603  (our own commands)
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return _start(args, env)
    return start


def main() -> None:
    """Parse the trees, run each one ``--runs`` times in turn, print the table."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH (repeatable)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=6, help="seconds of paced load per sidecar")
    parser.add_argument("--rate", type=float, default=500.0, help="offered requests/s")
    parser.add_argument("--in-process", action="store_true", help="SHADOW_PROXY_PROCESS=false")
    args = parser.parse_args()
    trees = {}
    for spec in args.tree:
        name, _, path = spec.partition("=")
        tree = Path(path).resolve()
        if not (tree / "shadow").is_dir():
            parser.error(f"--tree {spec}: {tree} has no shadow/ package")
        trees[name] = tree
    extra = {"SHADOW_PROXY_PROCESS": "false"} if args.in_process else {}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    with tempfile.TemporaryDirectory() as tmp, Stack(Path(tmp)) as stack:
        for run in range(args.runs):
            for name, tree in trees.items():
                stack_mod.start = _tree_start(tree)
                try:
                    with stack.sidecar(stack.ports["scorer_fast"], extra) as (api, port):
                        row = wrk(port, args.duration, 1000.0 / args.rate, Path(tmp))
                        counted = metrics(api)
                finally:
                    stack_mod.start = _start
                row["offered"], row["scored"] = counted.get("offered", 0.0), counted.get("scored", 0.0)
                results[name].append(row)
                print(f"  run {run + 1} {name:24} p50 {row['p50']:.2f} ms  p99 {row['p99']:.2f} ms  "
                      f"offered {row['offered']:.0f} scored {row['scored']:.0f}", file=sys.stderr)
    mode = "relay on the sidecar's loop" if args.in_process else "relay in its own process"
    print(f"median of {args.runs} runs; {args.rate:.0f} req/s paced for {args.duration} s; {mode}")
    print("| tree | p50 ms | p99 ms | p50 vs first | scored of offered (range) |")
    print("|---|---:|---:|---:|---|")
    first = None
    for name, rows in results.items():
        p50 = statistics.median(r["p50"] for r in rows)
        p99 = statistics.median(r["p99"] for r in rows)
        first = first or p50
        low, high = min(r["scored"] for r in rows), max(r["scored"] for r in rows)
        scored = f"{low:.0f}-{high:.0f} of {statistics.median(r['offered'] for r in rows):.0f}"
        print(f"| {name} | {p50:.2f} | {p99:.2f} | {p50 / first:.2f}x | {scored} |")


if __name__ == "__main__":
    main()
