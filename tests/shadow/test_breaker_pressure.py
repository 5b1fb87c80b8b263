"""The breaker and the machine's CPU pressure: a starved healthy scorer is not a failing one.

A scorer that answered lately and then times out while the machine's CPU is contended (PSI
``/proc/pressure/cpu``) is excused (``shadow_breaker_starved_total{reason="cpu_pressure"}``); the same
timeouts on an idle machine, or from a scorer that never answered, open the breaker. Once with real
contention (busy processes, more than the CPUs), then with the pressure reading injected (named so) to
pin each branch whatever else the machine is doing.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections import Counter
from typing import TYPE_CHECKING

import aiohttp
import pytest

from shadow.cpupressure import read_psi_cpu
from shadow.keys import METRICS, MIRROR
from tests.shadow.harness import (
    offer_batches,
    read_rows,
    running_sidecar,
    settings_for,
    ticket_type,
    write_catalog,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

    from aiohttp import web

    from tests.shadow.fault_scorer import Faults

SCORER = {"timeout_s": 0.2, "deadline_s": 2.0, "max_attempts": 1}
BREAKER = {"failure_threshold": 3, "reset_after_s": 60}


def injected_share(share: float) -> Callable[[], int]:
    """An injected PSI reader: some task waited ``share`` of the time (microseconds since start)."""
    start = time.monotonic()
    return lambda: int((time.monotonic() - start) * 1e6 * share)


@contextlib.contextmanager
def spinners() -> Iterator[None]:
    """Busy processes, two per CPU plus one: some task always waits for a CPU while they run."""
    n = 2 * (os.cpu_count() or 1) + 1
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


async def _offer(url: str, prefix: str, n: int, pause_s: float) -> None:
    async with aiohttp.ClientSession() as session:
        for i in range(n):
            body = {"decision_type": "tickets", "decision_id": f"{prefix}-{i}", "state": {"text": "x"}}
            async with session.post(f"{url}/v1/decisions", json=body) as resp:
                assert resp.status == 202
            await asyncio.sleep(pause_s)


async def _run(faults: Faults, scorer_url: str, tmp_path: Path, *, answered_first: bool,
               inject: Callable[[], int] | None = None, contend: bool = False) -> Counter[str]:
    """Healthy calls (if ``answered_first``), then 10 calls that each time out; what became of them."""
    dtype = ticket_type(scorer_url, scorer=SCORER, breaker=BREAKER)
    settings = settings_for(tmp_path, write_catalog(tmp_path, {"tickets": dtype}), workers=1)
    async with running_sidecar(settings) as (url, app):
        pressure = app[MIRROR].dispatcher.lag.pressure
        if inject is not None:
            pressure.read = inject
            pressure.samples.clear()
        if answered_first:
            await _offer(url, "healthy", 3, 0.05)
        faults.mode, faults.delay_s = "slow", 0.25
        await asyncio.sleep(0.2)  # a pressure sample from before the first slow call
        with spinners() if contend else contextlib.nullcontext():
            await _offer(url, "slow", 10, 0.25)
            await asyncio.sleep(0.5)  # the last call times out
        seen = _outcomes(app, scorer_url)
    faults.release.set()
    rows = read_rows(tmp_path / "records", "proposals")
    seen.update(r["reason"] or r["status"] for r in rows if r["decision_id"].startswith("slow"))
    return seen


def _outcomes(app: web.Application, scorer_url: str) -> Counter[str]:
    metric = app[METRICS].breaker_starved
    return Counter({f"starved:{reason}": int(metric.labels(scorer_url, "default", reason)._value.get())
                    for reason in ("loop_lag", "deadline_cut", "cpu_pressure")})


def no_loop_lag(started: float) -> bool:  # noqa: ARG001  (LoopLag.starved's signature)
    """Injected in place of ``LoopLag.starved``: the loop never lagged (named so where it is used)."""
    return False


needs_psi = pytest.mark.skipif(read_psi_cpu() is None, reason="no /proc/pressure/cpu on this machine")


@needs_psi
async def test_a_healthy_scorer_starved_by_a_contended_cpu_keeps_its_breaker_closed(
        faults: Faults, scorer_url: str, tmp_path: Path) -> None:
    """Real contention: busy processes outnumber the CPUs while each call times out; the breaker stays shut.

    Every timeout is excused (by the loop's lag or by the CPU pressure, whichever saw it first), none
    opens the breaker: no ``circuit_open`` row.
    """
    seen = await _run(faults, scorer_url, tmp_path, answered_first=True, contend=True)
    assert seen["scorer_timeout"] >= 3, seen
    assert seen["circuit_open"] == 0, seen
    assert seen["starved:loop_lag"] + seen["starved:cpu_pressure"] >= seen["scorer_timeout"], seen


@pytest.mark.parametrize(("share", "answered_first", "opens"), [
    (1.0, True, False),  # contended, the scorer answered lately: excused
    (0.0, True, True),  # an idle machine: the scorer's own timeouts
    (1.0, False, True),  # contended, but the scorer never answered: it is failing
])
async def test_cpu_pressure_excuses_a_timeout_only_for_a_scorer_that_answers_lately(
        faults: Faults, scorer_url: str, tmp_path: Path, share: float, answered_first: bool,
        opens: bool) -> None:
    """Injected PSI readings (``share`` of the time some task waited): which timeouts open the breaker."""
    seen = await _run(faults, scorer_url, tmp_path, answered_first=answered_first,
                      inject=injected_share(share))
    assert seen["scorer_timeout"] >= 3, seen
    assert (seen["circuit_open"] > 0) is opens, seen
    assert (seen["starved:cpu_pressure"] > 0) is not opens, seen


async def test_a_call_the_deadline_cut_short_is_not_held_against_a_healthy_scorer(
        faults: Faults, scorer_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Decisions that waited in the queue leave their call less than its timeout: its timeout is excused.

    Four workers, a scorer that answers every call in 0.4 s, a 1 s timeout and a 1 s deadline. Of 16
    decisions offered at once, the third wave of four starts ~0.8 s after it was offered: each call gets
    ~0.2 s, times out, and says nothing about the scorer, which answered the two waves before. Held
    against it (the bug seen in the quiet soak) they open the breaker and the next batch is refused
    (``circuit_open``). Excused (``reason="deadline_cut"``), the next batch is scored like the first.
    The machine's pressure is injected as idle and the loop's lag as none (both named so) so that only
    this rule can excuse them: on a loaded machine the loop lags too, and that excuse is checked first.
    """
    scorer = {"timeout_s": 1.0, "deadline_s": 1.0, "max_attempts": 1}
    dtype = ticket_type(scorer_url, scorer=scorer, breaker=BREAKER)
    settings = settings_for(tmp_path, write_catalog(tmp_path, {"tickets": dtype}), workers=4)
    faults.mode, faults.delay_s = "slow", 0.4
    async with running_sidecar(settings) as (url, app):
        lag = app[MIRROR].dispatcher.lag
        lag.pressure.read = injected_share(0.0)
        lag.pressure.samples.clear()
        monkeypatch.setattr(lag, "starved", no_loop_lag)
        for wave in ("first", "second"):
            await offer_batches(url, [wave], n=16)
            await asyncio.sleep(1.5)  # every call of the batch has ended
        cut = _outcomes(app, scorer_url)["starved:deadline_cut"]
    faults.release.set()
    rows = read_rows(tmp_path / "records", "proposals")
    seen = {wave: Counter(r["reason"] or r["status"] for r in rows if r["decision_id"].startswith(wave))
            for wave in ("first", "second")}
    assert seen["first"]["scorer_timeout"] >= 3, seen  # the cut calls happened
    assert seen["second"]["circuit_open"] == 0, seen
    assert seen["second"]["scored"] >= 4, seen
    assert cut >= seen["first"]["scorer_timeout"], (cut, seen)


async def test_cut_calls_of_a_scorer_that_never_answered_still_count(
        faults: Faults, scorer_url: str, tmp_path: Path) -> None:
    """The ``deadline_cut`` excuse needs an answer within 30 s: a scorer that never answered gets none.

    A scorer that holds every call, four workers, 0.5 s timeout, 0.6 s deadline, 8 decisions at once: the
    second wave's calls get ~0.1 s and time out like the first. None is excused (the metric stays 0), so
    a scorer that stopped answering opens its breaker however long its decisions queued.
    """
    scorer = {"timeout_s": 0.5, "deadline_s": 0.6, "max_attempts": 1}
    dtype = ticket_type(scorer_url, scorer=scorer, breaker={"failure_threshold": 100, "reset_after_s": 60})
    settings = settings_for(tmp_path, write_catalog(tmp_path, {"tickets": dtype}), workers=4)
    faults.mode, faults.delay_s = "slow", 30.0
    async with running_sidecar(settings) as (url, app):
        await offer_batches(url, ["held"], n=8)
        await asyncio.sleep(1.0)  # both waves have timed out
        cut = _outcomes(app, scorer_url)["starved:deadline_cut"]
    faults.release.set()
    rows = read_rows(tmp_path / "records", "proposals")
    seen = Counter(r["reason"] or r["status"] for r in rows)
    assert seen["scorer_timeout"] >= 5, seen  # the first wave and at least one cut call
    assert cut == 0, (cut, seen)
