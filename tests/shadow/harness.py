"""The sidecar tests' harness: apps served on loopback, catalogs and settings, running sidecars, rows.

Plain helpers, imported by the tests that use them (`tests/shadow/conftest.py` keeps the fixtures).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp
import pyarrow.parquet as pq
import yaml
from aiohttp import web
from pydantic import SecretStr

from shadow.app import init_app
from shadow.records.settings import RecordSettings
from shadow.settings import ShadowSettings

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable


@contextlib.asynccontextmanager
async def serve(app: web.Application, port: int = 0) -> AsyncIterator[str]:
    """Run an app on 127.0.0.1 and yield its base URL; clean it up (cleanup contexts included)."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    sock = site._server.sockets[0]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        await runner.cleanup()


TICKET_OPTIONS = [{"id": "billing", "text": "Billing"}, {"id": "technical", "text": "Technical support"},
                  {"id": "review", "text": "Needs human review"}]


def ticket_type(endpoint: str, **overrides: Any) -> dict[str, Any]:
    """A decision type for support tickets, scored by ``endpoint`` (semif_http unless overridden)."""
    scorer = {"backend": "semif_http", "endpoint": endpoint, "timeout_s": 0.3, "deadline_s": 1.0,
              "max_attempts": 2, "backoff_base_s": 0.01, "backoff_max_s": 0.05}
    scorer.update(overrides.pop("scorer", {}))
    dtype = {"question": "Which team should handle this ticket?",
             "options": [dict(o) for o in TICKET_OPTIONS], "review_option": "review",
             "state": {"store": True, "remove": ["email"], "hash": ["customer_id"]},
             "scorer": scorer, "experiment_ends_at": "2099-01-01T00:00:00Z",
             "proxy": {"path": "/route", "decision_id": {"source": "request_json", "path": "ticket_id"},
                       "state": {"source": "request_json", "path": "ticket"},
                       "outcome": {"source": "response_json", "path": "team"}}}
    dtype.update(overrides)
    return dtype


def write_catalog(tmp_path: Path, types: dict[str, dict[str, Any]]) -> Path:
    """Write a catalog YAML and return its path."""
    path = tmp_path / "catalog.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "decision_types": types}), encoding="utf-8")
    return path


def settings_for(tmp_path: Path, catalog: Path, **overrides: Any) -> ShadowSettings:
    """Test-sized sidecar settings writing records under ``tmp_path/records``."""
    records = RecordSettings(root=str(tmp_path / "records"), spool_dir=tmp_path / "spool", writer_id="test")
    values: dict[str, Any] = {
        "catalog": catalog, "records": records, "workers": 4,
        "redaction_key": "k" * 32, "shutdown_grace_s": 0.5, "kill_switch_poll_s": 0.05}
    values.update(overrides)
    return ShadowSettings(**values)


@contextlib.asynccontextmanager
async def running_sidecar(settings: ShadowSettings) -> AsyncIterator[tuple[str, web.Application]]:
    """The mirror API app, running; records are flushed when the block exits."""
    app = init_app(settings)
    async with serve(app) as url:
        yield url, app


@contextlib.asynccontextmanager
async def sidecar_process(settings: ShadowSettings) -> AsyncIterator[str]:
    """``semif-shadow sidecar run`` in its own process, set up by SHADOW_* variables; yields the API URL.

    SIGTERM on exit (the sidecar drains and flushes its records) and the exit code must be 0.
    """
    async with sidecar_subprocess(settings) as (url, _proc):
        yield url


@contextlib.asynccontextmanager
async def sidecar_subprocess(
        settings: ShadowSettings) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """``sidecar_process``, yielding the process too (its pid, for the tests that act on it)."""
    cli = str(Path(sys.executable).parent / "semif-shadow")
    proc = await asyncio.create_subprocess_exec(cli, "sidecar", "run", env=sidecar_env(settings),
                                                stderr=asyncio.subprocess.PIPE)
    assert proc.stderr is not None
    log = bytearray()
    drain = asyncio.create_task(_drain(proc.stderr, log))  # a full pipe would stall the sidecar's logging
    url = f"http://{settings.host}:{settings.port}"
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(300):
                with contextlib.suppress(aiohttp.ClientConnectionError):
                    async with session.get(url + "/healthz") as resp:
                        if resp.status == 200:
                            break
                if proc.returncode is not None:
                    await drain
                    raise AssertionError(f"sidecar exited: {log.decode()}")
                await asyncio.sleep(0.05)
        yield url, proc
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        await proc.wait()
        await drain
        assert proc.returncode == 0, log.decode()


def sidecar_env(settings: ShadowSettings) -> dict[str, str]:
    """This process's environment plus ``settings`` as SHADOW_* variables (for ``sidecar run``)."""
    env = dict(os.environ)
    for prefix, group in (("SHADOW_", settings), ("SHADOW_RECORDS_", settings.records)):
        for name in type(group).model_fields:
            value = getattr(group, name)
            if value is None or name == "records":
                continue
            plain = value.get_secret_value() if isinstance(value, SecretStr) else value
            env[f"{prefix}{name.upper()}"] = str(plain).lower() if isinstance(plain, bool) else str(plain)
    return env


async def _drain(stream: asyncio.StreamReader, into: bytearray) -> None:
    """Read ``stream`` to its end into ``into``."""
    while chunk := await stream.read(65536):
        into += chunk


def read_rows(root: Path, dataset: str) -> list[dict[str, Any]]:
    """Every row of one records dataset under ``root`` (all Parquet files, any partition)."""
    rows: list[dict[str, Any]] = []
    for path in sorted((root / dataset).rglob("*.parquet")):
        rows.extend(pq.read_table(path).to_pylist())
    return rows


def rows_by_id(tmp_path: Path) -> dict[str, dict[str, Any]]:
    """Proposals keyed by decision id."""
    return {r["decision_id"]: r for r in read_rows(tmp_path / "records", "proposals")}


async def wait_rows(url: str, n: int, timeout_s: float = 30.0) -> None:
    """Poll /metrics until ``n`` proposals rows have been handed to the store."""
    async with aiohttp.ClientSession() as session:
        for _ in range(int(timeout_s / 0.1)):
            async with session.get(f"{url}/metrics") as resp:
                text = await resp.text()
            rows = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                       if line.startswith("shadow_rows_total{"))
            if rows >= n:
                return
            await asyncio.sleep(0.1)
    raise AssertionError(f"fewer than {n} rows after {timeout_s} s")


async def until(condition: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """Poll ``condition`` until true, at most ``timeout_s`` (no event marks a lane's measurement)."""
    for _ in range(int(timeout_s / 0.05)):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not met in time")


BATCH = 1000


def batch(prefix: str, n: int = BATCH) -> dict[str, Any]:
    """One POST body of ``n`` decisions with distinct ids."""
    return {"decisions": [{"decision_type": "tickets", "decision_id": f"{prefix}-{i}",
                           "state": {"subject": f"ticket {i}", "email": "a@example.com", "customer_id": i}}
                          for i in range(n)]}


async def offer_batches(url: str, prefixes: list[str], n: int = BATCH) -> dict[str, str | None]:
    """POST every batch (``n`` decisions each) at once; return each decision's answer (None: queued)."""
    async with aiohttp.ClientSession() as session:
        async def post(prefix: str) -> list[dict[str, Any]]:
            async with session.post(f"{url}/v1/decisions", json=batch(prefix, n)) as resp:
                assert resp.status == 202, await resp.text()
                return list((await resp.json())["decisions"])
        answers = await asyncio.gather(*(post(p) for p in prefixes))
    return {d["decision_id"]: d["reason"] for ds in answers for d in ds}


def accounted(root: Path) -> tuple[Counter[str], Counter[str]]:
    """Proposals rows per decision id, and decisions counted in ``drops`` per reason."""
    rows = Counter(r["decision_id"] for r in read_rows(root, "proposals"))
    drops: Counter[str] = Counter()
    for r in read_rows(root, "drops"):
        drops[r["reason"]] += r["dropped"]
    return rows, drops


async def post(url: str, payload: Any, **kwargs: Any) -> tuple[int, Any]:
    """POST JSON (or raw bytes via ``data=``) and return status and decoded body."""
    async with aiohttp.ClientSession() as session:
        if "data" not in kwargs:
            kwargs["json"] = payload
        async with session.post(url, **kwargs) as resp:
            return resp.status, await resp.json()


async def offer_and_collect(url: str, ids: list[str], wait_s: float = 0.3) -> None:
    """Offer decisions, give the workers ``wait_s``."""
    async with aiohttp.ClientSession() as session:
        for decision_id in ids:
            body = {"decision_type": "tickets", "decision_id": decision_id,
                    "state": {"subject": "My invoice is wrong", "customer_id": 9}}
            async with session.post(f"{url}/v1/decisions", json=body) as resp:
                assert resp.status == 202
    await asyncio.sleep(wait_s)
