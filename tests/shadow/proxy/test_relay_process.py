"""The relay process, as it runs: which project modules it loads, and what it inherits (no secret)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiohttp

from tests.shadow.harness import read_rows
from tests.shadow.proxy.harness import REQUESTS, fetch, relay_stack

if TYPE_CHECKING:

    import pytest

ALLOWED = {"shadow", "shadow.errors", "shadow.proxy", "shadow.proxy.framing", "shadow.proxy.connection",
           "shadow.proxy.held", "shadow.proxy.hooks", "shadow.proxy.sides", "shadow.proxy.states",
           "shadow.proxy.relay", "shadow.proxy.channel", "shadow.proxy.main", "contracts", "contracts.errors",
           "contracts.tasks"}
"""Every project module the relay may load: framing, the relay, the channel, the error trees, stop_tasks."""


async def test_the_relay_process_loads_only_framing_the_channel_and_errors(
        scorer_url: str, tmp_path: Path, capfd: pytest.CaptureFixture[str],
) -> None:
    """Run the real relay process through a mirrored exchange and read what Python imported in it.

    The supervisor starts it with ``-X importtime`` (its ``python_flags``), so the child lists every
    module it imports on its stderr, which ``capfd`` reads (the environment cannot carry it: the relay
    runs isolated, ``-I``, with a minimal environment).
    """
    async with relay_stack(tmp_path, scorer_url, ("-X", "importtime")) as (proxy, _process), \
            aiohttp.ClientSession() as session:
        for method, path, kwargs in REQUESTS[:2]:
            await fetch(session, proxy, method, path, kwargs)
    err = capfd.readouterr().err
    loaded = {line.rsplit("|", 1)[-1].strip() for line in err.splitlines() if line.startswith("import time:")}
    assert "shadow.proxy.relay" in loaded  # the listing is the relay process's
    project = {m for m in loaded if m.split(".")[0] in {"contracts", "scorer", "shadow", "pipelines",
                                                         "dashboards", "semif_shadow"}}
    assert project - ALLOWED == set()
    assert {r["decision_id"] for r in read_rows(tmp_path / "records", "proposals")} == {"t-1", "t-2"}


async def test_the_relay_inherits_no_secret_and_runs_no_planted_module(
        scorer_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The relay's environment holds no key or token and its working folder is ``/``.

    A ``uvloop.py`` planted in the sidecar's working folder (and on PYTHONPATH) is not imported by it.
    """
    planted = tmp_path / "planted"
    planted.mkdir()
    marker = tmp_path / "planted-ran"
    (planted / "uvloop.py").write_text(f"open({str(marker)!r}, 'w').close()\n", encoding="utf-8")
    monkeypatch.chdir(planted)
    monkeypatch.setenv("PYTHONPATH", str(planted))
    monkeypatch.setenv("SHADOW_REDACTION_KEY", "hmac-key-secret")
    monkeypatch.setenv("SHADOW_TOKEN_TICKETS", "bearer-secret")
    async with relay_stack(tmp_path, scorer_url) as (proxy, process), aiohttp.ClientSession() as session:
        kwargs: dict[str, Any] = REQUESTS[0][2]
        status, *_ = await fetch(session, proxy, "POST", "/route", kwargs)
        assert process.proc is not None
        proc = Path(f"/proc/{process.proc.pid}")
        environ, cwd = (proc / "environ").read_bytes(), str((proc / "cwd").readlink())
    assert status == 200
    assert b"secret" not in environ
    assert cwd == "/"
    assert not marker.exists()
