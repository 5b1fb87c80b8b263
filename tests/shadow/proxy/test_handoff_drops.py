"""The relay's ``handoff_full`` drops reach the records: counted in ``drops``, so rows + drops = offered.

The sidecar's event loop is blocked (as an overloaded sidecar's is) while a client sends claimed requests
through the relay process to an upstream served from a thread: the relay keeps answering, its hand-off
to the sidecar fills (64 KiB, the smallest allowed) and it drops the rest of the exchanges. Once the
loop runs again, the relay's counters tell the sidecar how many, per route.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

from shadow.intake.supervisor import ProxyProcess
from shadow.keys import METRICS
from tests.shadow.harness import read_rows, running_sidecar, settings_for, ticket_type, write_catalog

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

N = 60
STATE_BYTES = 20_000


class _Upstream(BaseHTTPRequestHandler):
    """Answers every ``POST /route`` at once with a team (an outcome that is one of the options)."""

    def do_POST(self) -> None:
        """Read the body, answer 200."""
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b'{"team": "billing"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        """Quiet."""


@contextlib.contextmanager
def threaded_upstream() -> Iterator[str]:
    """`_Upstream` served from a thread (it answers while the sidecar's loop is blocked); its URL."""
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{upstream.server_port}"
    finally:
        upstream.shutdown()
        upstream.server_close()


def claimed_client(port: int, statuses: list[int]) -> None:
    """``N`` claimed requests of ``STATE_BYTES`` in turn on one connection; their statuses."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    for i in range(N):
        body = json.dumps({"ticket_id": f"h-{i}", "ticket": {"subject": "x" * STATE_BYTES}})
        conn.request("POST", "/route", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        statuses.append(response.status)
    conn.close()


async def test_handoff_full_exchanges_are_counted_in_drops(scorer_url: str, tmp_path: Path) -> None:
    """60 claimed requests of 20 KB while the sidecar cannot read: all answered, all accounted for."""
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    statuses: list[int] = []
    with threaded_upstream() as upstream_url:
        settings = settings_for(tmp_path, catalog, upstream_url=upstream_url, proxy_port=0,
                                proxy_handoff_bytes=65536)
        async with running_sidecar(settings) as (_api, core):
            proxy = ProxyProcess(settings, core)
            url = await proxy.start()
            try:
                client = threading.Thread(target=claimed_client, args=(int(url.rsplit(":", 1)[1]), statuses))
                client.start()
                client.join(60)  # blocks the loop: the sidecar reads nothing meanwhile
                metrics = core[METRICS]
                for _ in range(200):  # the relay's next counters frame (every 0.5 s)
                    offered = metrics.offered.labels("tickets", "default")._value.get()
                    if offered >= N:
                        break
                    await asyncio.sleep(0.05)
            finally:
                await proxy.stop()
    assert statuses == [200] * N
    rows = {r["decision_id"] for r in read_rows(tmp_path / "records", "proposals")}
    counted = read_rows(tmp_path / "records", "drops")
    drops = sum(r["dropped"] for r in counted if r["reason"] == "handoff_full")
    assert drops > 0
    assert len(rows) + drops == N
    assert offered == N
