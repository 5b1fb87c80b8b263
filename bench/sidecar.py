"""Production latency and throughput with no mirror, this sidecar in proxy mode, and nginx's ``mirror``.

Everything runs on loopback, started by this script:

    upstream   nginx answering ``POST /route`` at once (the production router stand-in)
    scorers    two fault-injecting scorers (``tests/shadow/fault_scorer.py``): answers in ~1 ms, or in 2 s
    (a) direct       wrk -> upstream
    (a') nginx hop   wrk -> nginx ``proxy_pass`` (no mirror) -> upstream: what any proxy hop costs here
    (b) sidecar      wrk -> ``semif-shadow sidecar run`` (proxy mode, every request mirrored) -> upstream,
                     with the relay in its own process (the default) and in the sidecar's process
    (c) nginx mirror wrk -> nginx (``mirror /m``, copies to the scorer) -> upstream

Each is loaded by wrk twice: at ``--rate`` requests/s, spaced evenly over 10 connections (latency
p50/p99; like wrk2's ``-R``, a Lua ``delay()`` hands out the slots of one schedule; wrk rounds delays
to whole milliseconds), and unpaced (throughput). Each sidecar row gets a freshly started sidecar, alone
(as on a production host). Run with ``--runs 3``: the table gives the median of the runs. Usage::

    .venv/bin/python bench/sidecar.py --runs 3 --duration 10
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:
    from collections.abc import Iterator

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
CONNECTIONS = 10

LUA = """
-- Requests spaced evenly at the offered rate (as wrk2's -R does): each delay() call takes the next free
-- slot on one schedule shared by all connections, read from CLOCK_MONOTONIC through LuaJIT's ffi.
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clk_id, bench_timespec *tp);
]]
local ts = ffi.new("bench_timespec")
local function now_ms()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end
local interval = %(interval_ms)s
local next_slot = nil
counter = 0
request = function()
  counter = counter + 1
  local id = "t-" .. counter .. "-" .. math.random(1e9)
  local body = '{"ticket_id": "' .. id .. '", "ticket": {"subject": "charged twice"}}'
  return wrk.format("POST", "/route", {["Content-Type"] = "application/json"}, body)
end
delay = function()
  if interval == 0 then return 0 end
  local now = now_ms()
  if next_slot == nil or next_slot < now - 50 then next_slot = now end
  local wait = next_slot - now
  next_slot = next_slot + interval
  if wait < 0 then return 0 end
  return wait
end
"""

NGINX = """
worker_processes 1;
pid %(prefix)s/nginx.pid;
error_log %(prefix)s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %(prefix)s/body; proxy_temp_path %(prefix)s/proxy;
  fastcgi_temp_path %(prefix)s/fcgi; uwsgi_temp_path %(prefix)s/uwsgi; scgi_temp_path %(prefix)s/scgi;
  upstream prod { server 127.0.0.1:%(upstream)d; keepalive 64; }
  server {
    listen 127.0.0.1:%(upstream)d;
    location = /route { default_type application/json; return 200 '{"team": "billing"}'; }
  }
  server { listen 127.0.0.1:%(plain_proxy)d;
    location / { proxy_http_version 1.1; proxy_set_header Connection ""; proxy_pass http://prod; } }
  server { listen 127.0.0.1:%(mirror_fast)d; %(mirror_fast_body)s }
  server { listen 127.0.0.1:%(mirror_slow)d; %(mirror_slow_body)s }
  server { listen 127.0.0.1:%(mirror_down)d; %(mirror_down_body)s }
}
"""

MIRROR_BODY = """
    location / { mirror /m; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_pass http://prod; }
    location = /m { internal; proxy_pass http://127.0.0.1:%d/mirror$request_uri; }
"""

METRIC = re.compile(r'^shadow_(offered|scored|dropped)_total\{[^}]*?(?:reason="(\w+)")?[^}]*\} ([\d.e+]+)$')

CATALOG = """
version: 1
decision_types:
  tickets:
    question: "Which team should handle this ticket?"
    options:
      - {id: billing, text: Billing}
      - {id: technical, text: Technical support}
      - {id: review, text: Review}
    review_option: review
    sampling: {rate: 1.0}
    scorer: {backend: semif_http, endpoint: "http://127.0.0.1:%d", timeout_s: 3.0, deadline_s: 5.0}
    experiment_ends_at: "2099-01-01T00:00:00Z"
    proxy:
      path: /route
      decision_id: {source: request_json, path: ticket_id}
      state: {source: request_json, path: ticket}
      outcome: {source: response_json, path: team}
"""


def free_port() -> int:
    """An unused loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, timeout: float = 20.0) -> None:
    """Block until something accepts on the port."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def start(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """A background process with its output discarded."""
    return subprocess.Popen(args, cwd=ROOT, env={**os.environ, **(env or {})},  # noqa: S603  (our own commands)
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then wait (the sidecar flushes its records on the way out)."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wrk(port: int, duration: int, interval_ms: float, workdir: Path) -> dict[str, float]:
    """Run wrk, one request every ``interval_ms`` (0: as fast as it can); requests/s and latency in ms."""
    script = workdir / f"load-{interval_ms}.lua"
    script.write_text(LUA % {"interval_ms": interval_ms})
    command = ["wrk", "-t1", f"-c{CONNECTIONS}", f"-d{duration}s", "--latency", "-s", str(script),
               f"http://127.0.0.1:{port}"]
    out = subprocess.run(command, capture_output=True, text=True, check=True).stdout  # noqa: S603  (fixed tool)
    result = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))}  # type: ignore[union-attr]
    for pct in ("50", "99"):
        match = re.search(rf"^\s+{pct}%\s+([\d.]+)(us|ms|s)\s*$", out, re.MULTILINE)
        value, unit = float(match.group(1)), match.group(2)  # type: ignore[union-attr]
        result[f"p{pct}"] = value * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    result["non2xx"] = float(errors.group(1)) if errors else 0.0
    return result


def metrics(port: int) -> dict[str, float]:
    """The sidecar's counters (offered, scored, dropped by reason)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        text = resp.read().decode()
    out: dict[str, float] = {}
    for line in text.splitlines():
        match = METRIC.match(line)
        if match:
            key = match.group(1) + (f":{match.group(2)}" if match.group(2) else "")
            out[key] = out.get(key, 0.0) + float(match.group(3))
    return out


@dataclass(frozen=True)
class Setup:
    """One row of the table: what wrk loads, and the sidecar to run for it (None: nginx only)."""

    name: str
    scorer: str
    port: str
    """Which of the stack's ports wrk loads (for a sidecar: its proxy port)."""
    sidecar: dict[str, str] | None = None
    """Extra SHADOW_* settings of the sidecar; its scorer is the ``scorer`` column's."""


SETUPS = [
    Setup("no mirror", "-", "upstream"),
    Setup("nginx proxy_pass, no mirror", "-", "plain_proxy"),
    Setup("sidecar, kill switch on", "healthy", "proxy", {"SHADOW_KILL_SWITCH": "true"}),
    Setup("sidecar, relay in-process", "healthy", "proxy", {"SHADOW_PROXY_PROCESS": "false"}),
    Setup("sidecar", "healthy", "proxy", {}),
    Setup("sidecar", "2 s", "proxy", {}),
    Setup("sidecar", "down", "proxy", {}),
    Setup("nginx mirror", "healthy", "mirror_fast"),
    Setup("nginx mirror", "2 s", "mirror_slow"),
    Setup("nginx mirror", "down", "mirror_down"),
]
SCORER_PORT = {"healthy": "scorer_fast", "2 s": "scorer_slow", "down": "scorer_down"}


class Stack:
    """Upstream, nginx fronts and scorers for one benchmark session; one sidecar at a time."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []
        names = ("upstream", "plain_proxy", "scorer_fast", "scorer_slow", "scorer_down", "mirror_fast",
                 "mirror_slow", "mirror_down")
        self.ports = {name: free_port() for name in names}
        self.started = 0

    def __enter__(self) -> Self:
        p = self.ports
        self.procs.append(start([PY, "-m", "tests.shadow.fault_scorer", "--port", str(p["scorer_fast"])]))
        self.procs.append(start([PY, "-m", "tests.shadow.fault_scorer", "--port", str(p["scorer_slow"]),
                                 "--delay", "2"]))
        self._nginx()
        for port in [p["upstream"], p["scorer_fast"], p["scorer_slow"], p["mirror_fast"]]:
            wait_port(port)
        return self

    def _nginx(self) -> None:
        prefix = self.workdir / "nginx"
        prefix.mkdir()
        p = self.ports
        values: dict[str, object] = {"prefix": prefix, "upstream": p["upstream"],
                                     "plain_proxy": p["plain_proxy"]}
        for name in ("fast", "slow", "down"):
            values[f"mirror_{name}"] = p[f"mirror_{name}"]
            values[f"mirror_{name}_body"] = MIRROR_BODY % p[f"scorer_{name}"]
        conf = NGINX % values
        (prefix / "nginx.conf").write_text(conf)
        self.procs.append(start(["nginx", "-p", str(prefix), "-c", str(prefix / "nginx.conf"),
                                 "-g", "daemon off; user root;"]))

    @contextlib.contextmanager
    def sidecar(self, scorer_port: int, extra: dict[str, str]) -> Iterator[tuple[int, int]]:
        """A fresh sidecar in proxy mode for one setup; yields (API port, proxy port)."""
        self.started += 1
        name = f"s{self.started}"
        api, proxy = free_port(), free_port()
        catalog = self.workdir / f"catalog-{name}.yaml"
        catalog.write_text(CATALOG % scorer_port)
        env = {"SHADOW_CATALOG": str(catalog), "SHADOW_PORT": str(api), "SHADOW_PROXY_PORT": str(proxy),
               "SHADOW_UPSTREAM_URL": f"http://127.0.0.1:{self.ports['upstream']}",
               "SHADOW_RECORDS_ROOT": str(self.workdir / f"records-{name}"),
               "SHADOW_RECORDS_SPOOL_DIR": str(self.workdir / f"spool-{name}"),
               "SHADOW_RECORDS_WRITER_ID": f"bench_{name}", **extra}
        proc = start([str(Path(PY).parent / "semif-shadow"), "sidecar", "run"], env)
        try:
            wait_port(api)
            wait_port(proxy)
            time.sleep(1.0)  # past start-up (imports, the relay's first connections)
            yield api, proxy
        finally:
            stop(proc)

    def __exit__(self, *exc: object) -> None:
        for proc in reversed(self.procs):
            stop(proc)


def one_run(stack: Stack, duration: int, rate: float) -> dict[tuple[str, str], dict[str, float]]:
    """Every setup: latency paced at ``rate``, then throughput unpaced.

    Each sidecar setup gets a freshly started sidecar, stopped afterwards, so no other sidecar runs
    beside it and no earlier flood is still being worked off.
    """
    results = {}
    for setup in SETUPS:
        with contextlib.ExitStack() as scope:
            api = None
            port = stack.ports.get(setup.port, 0)
            if setup.sidecar is not None:
                api, port = scope.enter_context(
                    stack.sidecar(stack.ports[SCORER_PORT[setup.scorer]], setup.sidecar))
            paced = wrk(port, duration, 1000.0 / rate, stack.workdir)
            counted = metrics(api) if api is not None else {}  # what the paced load offered and scored
            unpaced = wrk(port, max(2, duration // 2), 0, stack.workdir)
            row = {"p50": paced["p50"], "p99": paced["p99"], "rps_paced": paced["rps"],
                   "rps_max": unpaced["rps"], "non2xx": paced["non2xx"] + unpaced["non2xx"], **counted}
        results[(setup.name, setup.scorer)] = row
        print(f"  {setup.name:36} {setup.scorer:8} p50 {row['p50']:.2f} ms  p99 {row['p99']:.2f} ms  "
              f"{row['rps_paced']:.0f} req/s paced  {row['rps_max']:.0f} req/s max", file=sys.stderr)
    return results


def median_table(runs: list[dict[tuple[str, str], dict[str, float]]]) -> list[dict[str, Any]]:
    """Median of every figure over the runs, with p99 added over the no-mirror baseline."""
    table = []
    base_p99 = statistics.median(r[("no mirror", "-")]["p99"] for r in runs)
    base_p50 = statistics.median(r[("no mirror", "-")]["p50"] for r in runs)
    for key in runs[0]:
        figures = ("p50", "p99", "rps_paced", "rps_max", "non2xx")
        med = {k: statistics.median(r[key].get(k, 0.0) for r in runs) for k in figures}
        last = runs[-1][key]
        table.append({"setup": key[0], "scorer": key[1], **med, "p50_added": med["p50"] - base_p50,
                      "p99_added": med["p99"] - base_p99,
                      "offered": last.get("offered"), "scored": last.get("scored")})
    return table


def print_table(table: list[dict[str, Any]], runs: int, rate: float) -> None:
    """The side-by-side table (Markdown, pasted into docs/performance.md)."""
    print(f"median of {runs} runs; latency at {rate:.0f} req/s offered ({CONNECTIONS} connections, paced), "
          f"throughput unpaced")
    print("| setup | scorer | p50 ms | p99 ms | p99 added ms | req/s paced | req/s max | non-2xx |"
          " sidecar offered / scored at the paced rate (last run) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for r in table:
        counts = f"{r['offered'] or 0:.0f} / {r['scored'] or 0:.0f}" if r["offered"] is not None else ""
        print(f"| {r['setup']} | {r['scorer']} | {r['p50']:.2f} | {r['p99']:.2f} | {r['p99_added']:+.2f} | "
              f"{r['rps_paced']:.0f} | {r['rps_max']:.0f} | {r['non2xx']:.0f} | {counts} |")


def preflight() -> None:
    """Exit unless nginx and wrk are installed; print the load average the run starts at."""
    for tool in ("nginx", "wrk"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} not found: apt-get install -y nginx wrk")
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs at the start", file=sys.stderr)


def main() -> None:
    """Parse arguments, run, print."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=int, default=10, help="seconds per paced load")
    parser.add_argument("--rate", type=float, default=500.0, help="offered requests/s for the latency load")
    parser.add_argument("--json", type=Path, default=None, help="also write the table here")
    args = parser.parse_args()
    preflight()
    with tempfile.TemporaryDirectory(prefix="bench-sidecar-") as tmp, Stack(Path(tmp)) as stack:
        runs = []
        for i in range(args.runs):
            print(f"run {i + 1}/{args.runs}", file=sys.stderr)
            runs.append(one_run(stack, args.duration, args.rate))
    table = median_table(runs)
    print(f"load average {os.getloadavg()[0]:.2f} at the end (the bench adds about 1)", file=sys.stderr)
    print_table(table, args.runs, args.rate)
    if args.json:
        args.json.write_text(json.dumps(table, indent=2))


if __name__ == "__main__":
    main()
