"""`semif-shadow sidecar run` as a process: proxy mode end to end, records flushed on SIGTERM."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING

import aiohttp

from shadow.records.settings import default_writer_id
from tests.harness import free_port
from tests.shadow.harness import read_rows, serve, ticket_type, write_catalog
from tests.shadow.upstream import upstream_app

if TYPE_CHECKING:
    from tests.shadow.fault_scorer import Faults

CLI = Path(sys.executable).parent / "semif-shadow"


def wait_ready(port: int, proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Poll /healthz until the sidecar answers."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "sidecar exited"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("sidecar did not start")


async def scored_rows(api: str, n: int, timeout_s: float = 30.0) -> None:
    """Poll the sidecar's /metrics until ``n`` scored rows were handed to the store."""
    async with aiohttp.ClientSession() as session:
        for _ in range(int(timeout_s / 0.05)):
            async with session.get(f"{api}/metrics") as resp:
                if f'shadow_rows_total{{status="scored"}} {float(n)}' in await resp.text():
                    return
            await asyncio.sleep(0.05)
    raise AssertionError(f"not {n} scored rows after {timeout_s} s")


async def test_run_command_proxies_and_flushes_on_sigterm(faults: Faults, scorer_url: str,
                                                           tmp_path: Path) -> None:
    """The installed command runs the API and the proxy, and stops cleanly on SIGTERM.

    The decision and its outcome are then in the records (the default sink, the RecordStore).
    """
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    api, proxy = free_port(), free_port()
    async with serve(upstream_app()) as upstream:
        env = {**os.environ, "SHADOW_RECORDS_ROOT": str(tmp_path / "records"),
               "SHADOW_REDACTION_KEY": "k" * 32, "SHADOW_RECORDS_SPOOL_DIR": str(tmp_path / "spool"),
               "SHADOW_RECORDS_WRITER_ID": "cli_test"}
        command = [str(CLI), "sidecar", "run", "--catalog", str(catalog), "--port", str(api),
                   "--proxy-port", str(proxy), "--upstream", upstream]
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,  # noqa: S603, ASYNC220  (a server we stop below)
                                stderr=subprocess.PIPE)
        try:
            wait_ready(api, proc)
            body = {"ticket_id": "cli-1", "ticket": {"s": 1}}
            async with aiohttp.ClientSession() as session, session.post(
                    f"http://127.0.0.1:{proxy}/route", json=body) as resp:
                assert resp.status == 200
                assert json.loads(await resp.read())["team"] == "billing"
            await scored_rows(f"http://127.0.0.1:{api}", 1)  # the scorer lives on this loop: it answered
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = await asyncio.to_thread(proc.communicate, timeout=30)  # the loop keeps serving
    assert proc.returncode == 0, err.decode()
    rows = read_rows(tmp_path / "records", "proposals")
    assert [(r["decision_id"], r["status"]) for r in rows] == [("cli-1", "scored")]
    assert [o["outcome"] for o in read_rows(tmp_path / "records", "outcomes")] == ["billing"]
    assert faults.calls == 1


async def test_killed_sidecar_leaves_lost_rows_for_queued_decisions(faults: Faults, scorer_url: str,
                                                                     tmp_path: Path) -> None:
    """SIGKILL with decisions in flight and queued: recovery writes a ``lost`` row for each of them.

    One per candidate: the type has a challenger beside its champion, and each owes its own row. The
    store's durable note is taken when a decision is queued, not when a worker picks it up.
    """
    from shadow.records.recovery import recover  # noqa: PLC0415
    from shadow.records.settings import RecordSettings  # noqa: PLC0415

    faults.mode = "slow"
    slow = {"timeout_s": 30, "deadline_s": 60}
    challenger = {"backend": "semif_http", "endpoint": scorer_url, **slow}
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url, scorer=slow,
                                                              candidates={"b": challenger})})
    api = free_port()
    env = {**os.environ, "SHADOW_RECORDS_ROOT": str(tmp_path / "records"), "SHADOW_REDACTION_KEY": "k" * 32,
           "SHADOW_RECORDS_SPOOL_DIR": str(tmp_path / "spool"), "SHADOW_RECORDS_WRITER_ID": "crash_test",
           "SHADOW_WORKERS": "1"}
    command = [str(CLI), "sidecar", "run", "--catalog", str(catalog), "--port", str(api)]
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL,  # noqa: S603, ASYNC220  (killed below)
                            stderr=subprocess.PIPE)
    try:
        wait_ready(api, proc)
        decisions = [{"decision_type": "tickets", "decision_id": f"k-{i}", "state": {"text": "x"}}
                     for i in range(5)]
        async with aiohttp.ClientSession() as session, session.post(
                f"http://127.0.0.1:{api}/v1/decisions", json={"decisions": decisions}) as resp:
            assert (await resp.json())["queued"] == 5
        await asyncio.sleep(0.5)  # past the group commit; one decision is with the (10 s) scorer
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    faults.release.set()
    settings = RecordSettings(root=str(tmp_path / "records"), spool_dir=tmp_path / "spool",
                              writer_id="crash_test")
    report = recover(settings)
    assert report.lost == 10
    rows = read_rows(tmp_path / "records", "proposals")
    assert sorted((r["decision_id"], r["candidate"], r["status"], r["reason"]) for r in rows) == [
        (f"k-{i}", c, "lost", "crash_recovery") for i in range(5) for c in ("b", "default")]


async def test_a_restarted_sidecar_keeps_its_writer_id_and_republishes_nothing_twice(
        faults: Faults, scorer_url: str, tmp_path: Path) -> None:
    """With the default writer id, recovery after a restart rewrites the same files, never a second copy.

    A sidecar is killed with scored decisions in its journal. The spool is kept aside; a restart recovers
    and publishes them, then the kept spool is put back (as if that restart had died after publishing
    but before removing the segment) and a third start recovers it again. Each decision must have one
    row: the default writer id (the host name) names the files the same every time. With a writer id
    that changes per process (the pid), the third start would publish every row a second time.
    """
    del faults
    catalog = write_catalog(tmp_path, {"tickets": ticket_type(scorer_url)})
    spool, kept = tmp_path / "spool", tmp_path / "spool-kept"
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHADOW_")}
    env |= {"SHADOW_RECORDS_ROOT": str(tmp_path / "records"), "SHADOW_REDACTION_KEY": "k" * 32,
            "SHADOW_RECORDS_SPOOL_DIR": str(spool)}

    def start() -> tuple[subprocess.Popen[bytes], int]:
        api = free_port()
        proc = subprocess.Popen([str(CLI), "sidecar", "run", "--catalog", str(catalog), "--port", str(api)],  # noqa: S603
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_ready(api, proc)
        return proc, api

    proc, api = start()
    try:
        decisions = [{"decision_type": "tickets", "decision_id": f"r-{i}", "state": {"text": "x"}}
                     for i in range(6)]
        async with aiohttp.ClientSession() as session:
            base = f"http://127.0.0.1:{api}"
            async with session.post(f"{base}/v1/decisions", json={"decisions": decisions}) as r:
                assert (await r.json())["queued"] == 6
        await scored_rows(base, 6)  # all six scored and handed to the journal
        await asyncio.sleep(0.2)  # past the group commit
    finally:
        proc.kill()
        proc.communicate(timeout=30)
    shutil.copytree(spool, kept)
    for _ in range(2):
        proc, _ = start()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err.decode()
        shutil.rmtree(spool)
        shutil.copytree(kept, spool)
    rows = read_rows(tmp_path / "records", "proposals")
    assert sorted(r["decision_id"] for r in rows) == [f"r-{i}" for i in range(6)]
    assert {r["status"] for r in rows} == {"scored"}
    writers = {p.name.rsplit("-", 1)[0] for p in (tmp_path / "records").rglob("*.parquet")}
    assert writers == {default_writer_id()}
