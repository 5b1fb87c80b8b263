"""The relay process, as it runs: which project modules it loads (none of the catalog, mirror or store)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import aiohttp

from tests.shadow.conftest import read_rows
from tests.shadow.proxy.test_proxy import REQUESTS, fetch, proxy_stack

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

ALLOWED = {"shadow", "shadow.errors", "shadow.proxy", "shadow.proxy.framing", "shadow.proxy.connection",
           "shadow.proxy.relay", "shadow.proxy.channel", "shadow.proxy.main", "contracts", "contracts.errors"}
"""Every project module the relay may load: framing, the relay, the channel and the error trees."""


async def test_the_relay_process_loads_only_framing_the_channel_and_errors(
        scorer_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str],
) -> None:
    """Run the real relay process through a mirrored exchange and read what Python imported in it.

    ``PYTHONPROFILEIMPORTTIME`` makes the child list every module it imports on its stderr, which
    ``capfd`` reads; only the relay process is started with it (the test process started before).
    """
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    async with proxy_stack(tmp_path, scorer_url) as (_upstream, proxy, _api), \
            aiohttp.ClientSession() as session:
        for method, path, kwargs in REQUESTS[:2]:
            await fetch(session, proxy, method, path, kwargs)
    monkeypatch.delenv("PYTHONPROFILEIMPORTTIME")
    err = capfd.readouterr().err
    loaded = {line.rsplit("|", 1)[-1].strip() for line in err.splitlines() if line.startswith("import time:")}
    assert "shadow.proxy.relay" in loaded  # the listing is the relay process's (main runs as __main__)
    project = {m for m in loaded if m.split(".")[0] in {"contracts", "scorer", "shadow", "pipelines",
                                                         "dashboards", "semif_shadow"}}
    assert project - ALLOWED == set()
    assert {r["decision_id"] for r in read_rows(tmp_path / "records", "proposals")} == {"t-1", "t-2"}
