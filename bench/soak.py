"""Soak: production at the machine's limit through the proxy, and what the mirror makes of it.

Started by this script, all on loopback: nginx answering ``POST /route`` at once (the production
router), a fault-injecting scorer answering in about 1 ms (``tests/shadow/fault_scorer.py``), and, per
phase, a fresh ``semif-shadow sidecar run`` in proxy mode with its default settings (relay process,
record store on local disk). wrk loads with ``--connections`` (4) connections:

    no mirror, saturating   wrk -> nginx, unpaced: the baseline
    sidecar, saturating     wrk -> relay -> nginx, unpaced, every request a decision on a claimed route
    no mirror, paced        wrk -> nginx at ``--paced-rate`` requests/s
    sidecar, paced          wrk -> relay -> nginx at the same rate (what the store sustains)

For each sidecar phase it prints production's throughput and latency against no-mirror, the
decisions offered against proposals rows plus drop summaries (they must be equal: the script exits 1
otherwise), scored per second, the sidecar's and the relay's RSS every few seconds (during the load,
and idle after it), the answer time of a normal request right after the load, and how long SIGTERM
took to exit, beside the sum of the configured bounds (``shadow.bounds``). ``--runs N`` repeats the
whole and reports medians. The default run is short (30 s per saturating phase); ``--duration 180``
is an operator's bad day. Usage::

    .venv/bin/python bench/soak.py                  # ~3 minutes (5 on a loaded machine)
    .venv/bin/python bench/soak.py --duration 180   # the long soak
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.dataset as ds

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.sidecar import CATALOG, LUA, NGINX, PY, free_port, preflight, start, wait_port
from shadow.bounds import worst_case
from shadow.settings import ShadowSettings

if TYPE_CHECKING:
    from collections.abc import Iterator

COUNTER = re.compile(r"^(shadow_\w+?)(?:_total)?(\{[^}]*\})? ([\d.e+-]+)$")


def rss_mb(pid: int) -> float:
    """A process's resident set, MB (0 once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    match = re.search(r"^VmRSS:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) / 1024 if match else 0.0


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (the sidecar's relay process)."""
    with contextlib.suppress(OSError):
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return []


def scrape(api: int) -> dict[str, float]:
    """The sidecar's shadow_* series, summed over labels except ``reason`` (kept as ``name:reason``)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{api}/metrics", timeout=10) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        match = COUNTER.match(line)
        if match is None or match.group(1).endswith("_created"):  # a counter's creation time, not a count
            continue
        name, labels, value = match.group(1), match.group(2) or "", float(match.group(3))
        reason = re.search(r'reason="([^"]*)"', labels)
        key = f"{name}:{reason.group(1)}" if reason else name
        out[key] = out.get(key, 0.0) + value
    return out


def settled(api: int, timeout_s: float = 120.0) -> dict[str, float]:
    """The sidecar's series once it has worked off the relay's hand-off (offered stopped growing).

    Offered stops growing when every exchange the relay handed over has been read (those it could not
    hand over are counted offered, as ``handoff_full``, with the relay's next counters).
    """
    previous, end = -1.0, time.monotonic() + timeout_s
    while time.monotonic() < end:
        now = scrape(api)
        offered = now.get("shadow_offered", 0.0)
        if offered == previous:
            return now
        previous = offered
        time.sleep(1.0)
    raise RuntimeError("the sidecar kept offering decisions for two minutes after the load")


def wrk(port: int, duration: int, connections: int, rate: float, workdir: Path) -> dict[str, float]:
    """Load ``port`` with wrk: unpaced (rate 0) or paced; requests, requests/s, latency avg/p50/p99 in ms."""
    script = workdir / f"soak-{rate}.lua"
    script.write_text(LUA % {"interval_ms": 1000.0 / rate if rate else 0})
    command = ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency", "-s", str(script),
               f"http://127.0.0.1:{port}"]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout  # noqa: S603  (fixed tool)
    ms = {"us": 0.001, "ms": 1.0, "s": 1000.0}
    result = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
              "requests": float(re.search(r"(\d+) requests in", out).group(1))}  # type: ignore[union-attr]
    avg = re.search(r"Latency\s+([\d.]+)(us|ms|s)", out)
    result["avg"] = float(avg.group(1)) * ms[avg.group(2)]  # type: ignore[union-attr]
    for pct in ("50", "99"):
        match = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s)\s*$", out, re.MULTILINE)
        result[f"p{pct}"] = float(match.group(1)) * ms[match.group(2)]  # type: ignore[union-attr]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    result["non2xx"] = float(errors.group(1)) if errors else 0.0
    return result


def one_request_ms(port: int) -> float:
    """The answer time of one ordinary request."""
    body = json.dumps({"ticket_id": "after-load", "ticket": {"subject": "hello"}}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/route", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(request, timeout=30) as resp:  # noqa: S310  (loopback)
        resp.read()
    return (time.perf_counter() - t0) * 1000


def records(root: Path) -> tuple[int, dict[str, int]]:
    """Proposals rows, and decisions counted in drops per reason."""
    rows = 0
    if (root / "proposals").exists():
        rows = ds.dataset(root / "proposals", format="parquet").count_rows()
    drops: dict[str, int] = {}
    if (root / "drops").exists():
        for row in ds.dataset(root / "drops", format="parquet").to_table(["reason", "dropped"]).to_pylist():
            drops[row["reason"]] = drops.get(row["reason"], 0) + row["dropped"]
    return rows, drops


class Sampler(threading.Thread):
    """RSS of the sidecar and its relay every ``every_s`` seconds, with the phase it was taken in."""

    def __init__(self, pid: int, every_s: float) -> None:
        super().__init__(daemon=True)
        self.pid, self.every_s = pid, every_s
        self.phase = "idle before"
        self.samples: list[tuple[float, str, float, float]] = []
        self.done = threading.Event()
        self.t0 = time.monotonic()

    def run(self) -> None:
        """Sample until `done` is set."""
        while not self.done.wait(self.every_s):
            relay = sum(rss_mb(c) for c in children(self.pid))
            self.samples.append((time.monotonic() - self.t0, self.phase, rss_mb(self.pid), relay))


@contextlib.contextmanager
def sidecar(workdir: Path, name: str, upstream: int, scorer: int) -> Iterator[tuple[subprocess.Popen[bytes],
                                                                                  int, int, Path]]:
    """A fresh sidecar in proxy mode with default settings; yields (process, API port, proxy port, root)."""
    api, proxy = free_port(), free_port()
    catalog = workdir / f"catalog-{name}.yaml"
    catalog.write_text(CATALOG % scorer)
    root = workdir / f"records-{name}"
    env = {"SHADOW_CATALOG": str(catalog), "SHADOW_PORT": str(api), "SHADOW_PROXY_PORT": str(proxy),
           "SHADOW_UPSTREAM_URL": f"http://127.0.0.1:{upstream}", "SHADOW_RECORDS_ROOT": str(root),
           "SHADOW_RECORDS_SPOOL_DIR": str(workdir / f"spool-{name}"), "SHADOW_RECORDS_WRITER_ID": name}
    proc = start([str(Path(PY).parent / "semif-shadow"), "sidecar", "run"], env)
    try:
        wait_port(api, timeout=120)  # a loaded machine starts slowly
        wait_port(proxy, timeout=120)
        time.sleep(1.0)
        yield proc, api, proxy, root
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def mirror_phase(workdir: Path, name: str, ports: dict[str, int], args: argparse.Namespace,
                 load_spec: tuple[float, int]) -> dict[str, Any]:
    """One sidecar phase, ``load_spec`` (rate, seconds): load, one request, idle, SIGTERM; the accounting."""
    rate, duration = load_spec
    with sidecar(workdir, name, ports["upstream"], ports["scorer"]) as (proc, api, proxy, root):
        sampler = Sampler(proc.pid, args.sample_s)
        sampler.start()
        time.sleep(args.sample_s * 2)
        sampler.phase = "load"
        before = scrape(api)
        load = wrk(proxy, duration, args.connections, rate, workdir)
        during = scrape(api)  # scored/s: what the load's own seconds scored
        sampler.phase = "idle after"
        after_ms = one_request_ms(proxy)
        time.sleep(args.idle_s)
        after = settled(api)
        offered, relayed = after.get("shadow_offered", 0.0), after.get("shadow_proxy_requests", 0.0)
        sampler.phase = "sigterm"
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        sigterm_s = time.monotonic() - t0
        sampler.done.set()
        sampler.join()
    rows, drops = records(root)
    scored = during.get("shadow_scored", 0.0) - before.get("shadow_scored", 0.0)
    loaded = [s for s in sampler.samples if s[1] == "load"]
    idle_after = [s for s in sampler.samples if s[1] == "idle after"]
    return {"load": load, "after_ms": after_ms, "offered": offered, "relayed": relayed, "rows": rows,
            "drops": drops, "dropped": sum(drops.values()), "scored_per_s": scored / duration,
            "sigterm_s": sigterm_s,
            "rss_idle_before": sampler.samples[0][2:] if sampler.samples else (0.0, 0.0),
            "rss_peak": (max((s[2] for s in loaded), default=0.0), max((s[3] for s in loaded), default=0.0)),
            "rss_idle_after": idle_after[-1][2:] if idle_after else (0.0, 0.0),
            "rss_series": sampler.samples,
            "relay_handoff_full": after.get("shadow_proxy_unmirrored:handoff_full", 0.0),
            "shed": after.get("shadow_shed", 0.0),
            "breaker_starved": {k.split(":", 1)[1]: v for k, v in after.items()
                                if k.startswith("shadow_breaker_starved:")},
            "circuit_open": after.get("shadow_dropped:circuit_open", 0.0)}


def one_run(workdir: Path, ports: dict[str, int], args: argparse.Namespace, run: int) -> dict[str, Any]:
    """Saturating and paced, each against no mirror in the same run."""
    out: dict[str, Any] = {}
    out["base_sat"] = wrk(ports["upstream"], args.duration, args.connections, 0, workdir)
    out["sat"] = mirror_phase(workdir, f"sat{run}", ports, args, (0, args.duration))
    paced = args.paced_rate
    out["base_paced"] = wrk(ports["upstream"], args.paced_duration, args.connections, paced, workdir)
    out["paced"] = mirror_phase(workdir, f"paced{run}", ports, args, (paced, args.paced_duration))
    for key in ("sat", "paced"):
        phase = out[key]
        phase["balanced"] = phase["offered"] == phase["rows"] + phase["dropped"]
        print(f"  run {run} {key}: {phase['load']['rps']:.0f} req/s, offered {phase['offered']:.0f} = rows "
              f"{phase['rows']} + drops {phase['dropped']} {phase['drops']}: {phase['balanced']}; "
              f"SIGTERM {phase['sigterm_s']:.1f} s", file=sys.stderr)
    return out


def med(runs: list[dict[str, Any]], *path: str, index: int | None = None) -> float:
    """The median over runs of one figure."""
    values = []
    for run in runs:
        value: Any = run
        for key in path:
            value = value[key]
        values.append(float(value[index] if index is not None else value))
    return statistics.median(values)


def starved(by_reason: dict[str, float]) -> str:
    """Scorer timeouts the breaker excused, in all and per reason (``loop_lag``, ``deadline_cut``, ...)."""
    total = sum(by_reason.values())
    parts = ", ".join(f"{reason} {n:.0f}" for reason, n in sorted(by_reason.items()) if n)
    return f"{total:.0f} ({parts})" if parts else f"{total:.0f}"


def report(runs: list[dict[str, Any]], args: argparse.Namespace) -> None:
    """The Markdown tables for docs/performance.md."""
    bound = worst_case(ShadowSettings(catalog=Path("unused.yaml")), candidates=1,
                       connections=args.connections)
    print(f"\nmedian of {len(runs)} runs; wrk -c{args.connections}; saturating {args.duration} s, paced "
          f"{args.paced_duration} s at {args.paced_rate:.0f} req/s; default settings\n")
    print("| phase | no mirror req/s | sidecar req/s | ratio | no mirror avg / p99 ms | sidecar avg / p99 ms "
          "| non-2xx | request after load ms |")
    print("|---|---:|---:|---:|---|---|---:|---:|")
    for key, base in (("sat", "base_sat"), ("paced", "base_paced")):
        b, s = med(runs, base, "rps"), med(runs, key, "load", "rps")
        print(f"| {key} | {b:.0f} | {s:.0f} | {s / b:.2f} | {med(runs, base, 'avg'):.2f} / "
              f"{med(runs, base, 'p99'):.2f} | {med(runs, key, 'load', 'avg'):.2f} / "
              f"{med(runs, key, 'load', 'p99'):.2f} | {med(runs, key, 'load', 'non2xx'):.0f} | "
              f"{med(runs, key, 'after_ms'):.1f} |")
    print("\n| phase | offered | rows | drops | rows + drops = offered | scored/s | shed | handoff_full "
          "| circuit_open | breaker starved | SIGTERM s |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for key in ("sat", "paced"):
        last = runs[-1][key]
        balanced = all(r[key]["balanced"] for r in runs)
        print(f"| {key} | {last['offered']:.0f} | {last['rows']} | {last['dropped']} | "
              f"{'yes' if balanced else 'NO'} (every run) | {med(runs, key, 'scored_per_s'):.0f} | "
              f"{last['shed']:.0f} | {last['relay_handoff_full']:.0f} | {last['circuit_open']:.0f} | "
              f"{starved(last['breaker_starved'])} | {med(runs, key, 'sigterm_s'):.1f} |")
    print("\nRSS MB (sidecar / relay): idle before, peak under load, idle after; worst case from settings")
    print("\n| phase | idle before | peak | idle after | bound (sidecar / relay, above idle) |")
    print("|---|---|---|---|---|")
    for key in ("sat", "paced"):
        cells = [f"{med(runs, key, field, index=0):.0f} / {med(runs, key, field, index=1):.0f}"
                 for field in ("rss_idle_before", "rss_peak", "rss_idle_after")]
        limits = f"{bound['sidecar'] / 2**20:.0f} / {bound['relay'] / 2**20:.0f}"
        print(f"| {key} | {' | '.join(cells)} | {limits} |")
    series = runs[-1]["sat"]["rss_series"]
    print("\nsaturating phase, last run, RSS over time (s, phase, sidecar MB, relay MB):")
    step = max(1, len(series) // 20)
    print(", ".join(f"{t:.0f}s {p} {a:.0f}/{b:.0f}" for t, p, a, b in series[::step]))


def main() -> None:
    """Parse arguments, run, print."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--duration", type=int, default=30, help="seconds of saturating load")
    parser.add_argument("--paced-duration", type=int, default=20, help="seconds of paced load")
    parser.add_argument("--paced-rate", type=float, default=300.0, help="requests/s of the paced load")
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--idle-s", type=float, default=5.0, help="idle time after each load")
    parser.add_argument("--sample-s", type=float, default=1.0, help="RSS sampling period")
    parser.add_argument("--json", type=Path, default=None, help="also write the raw results here")
    args = parser.parse_args()
    preflight()
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp:
        workdir = Path(tmp)
        ports = {"upstream": free_port(), "scorer": free_port()}
        prefix = workdir / "nginx"
        prefix.mkdir()
        unused = {name: free_port() for name in ("plain_proxy", "mirror_fast", "mirror_slow", "mirror_down")}
        bodies = {f"{name}_body": "" for name in unused if name.startswith("mirror")}  # upstream only
        (prefix / "nginx.conf").write_text(NGINX % {"prefix": prefix, "upstream": ports["upstream"], **unused,
                                                    **bodies})
        procs = [start([PY, "-m", "tests.shadow.fault_scorer", "--port", str(ports["scorer"])]),
                 start(["nginx", "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g",
                        "daemon off; user root;"])]
        try:
            wait_port(ports["upstream"])
            wait_port(ports["scorer"])
            runs = [one_run(workdir, ports, args, i + 1) for i in range(args.runs)]
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait()
    print(f"load average {os.getloadavg()[0]:.2f} at the end", file=sys.stderr)
    report(runs, args)
    if args.json:
        args.json.write_text(json.dumps(runs, indent=2, default=str))
    if not all(r[k]["balanced"] for r in runs for k in ("sat", "paced")):
        sys.exit("rows + drops != offered")


if __name__ == "__main__":
    main()
