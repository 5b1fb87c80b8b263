"""The worst-case memory of ``docs/sidecar.md`` is what `shadow.bounds` computes from the settings."""

from __future__ import annotations

import re
from pathlib import Path

from shadow.bounds import relay_connection, worst_case
from shadow.settings import ShadowSettings

MIB = 1024 * 1024
DOC = Path(__file__).parents[2] / "docs" / "sidecar.md"


def test_the_documented_memory_bound_is_the_computed_one() -> None:
    """The table's totals (defaults, one candidate) match `worst_case`, the relay's at any load too.

    Any load: by default the relay's part counts ``SHADOW_PROXY_MAX_CONNECTIONS`` connections, the most
    it ever holds, beside the ``SHADOW_PROXY_HELD_BYTES`` budget; the 4-connection figure is what the
    soak's load can reach.
    """
    settings = ShadowSettings(catalog=Path("unused.yaml"))
    text = DOC.read_text(encoding="utf-8")
    bound = worst_case(settings, candidates=1)
    sidecar = re.search(r"\| \*\*sidecar\*\* \| \| \*\*(\d+) MiB\*\* \|", text)
    relay = re.search(r"\| \*\*relay\*\* \| \| \*\*(\d+) GiB\*\* at 4096 connections; (\d+) MiB at 4;", text)
    assert sidecar is not None
    assert relay is not None
    assert int(sidecar.group(1)) == round(bound["sidecar"] / MIB)
    assert int(relay.group(1)) == round(bound["relay"] / 1024 / MIB)
    assert int(relay.group(2)) == round(worst_case(settings, 1, connections=4)["relay"] / MIB)
    assert bound["relay connections"] == settings.proxy_max_connections * relay_connection(settings)
    assert f"{relay_connection(settings) / MIB:g} MiB" in text
    held = re.search(r"\| relay held bytes \| `SHADOW_PROXY_HELD_BYTES`[^|]*\| (\d+) MiB \|", text)
    assert held is not None
    assert int(held.group(1)) * MIB == settings.proxy_held_bytes


def test_the_relay_bound_grows_with_connections_only_by_fixed_costs() -> None:
    """Body copies and connect buffers are in one budget: a connection adds its heads and buffers only.

    Raising the mirror cap moves no per-connection figure; the budget is counted once whatever the load.
    """
    settings = ShadowSettings(catalog=Path("unused.yaml"))
    larger = ShadowSettings(catalog=Path("unused.yaml"), mirror_max_bytes=8 * MIB)
    assert relay_connection(larger) == relay_connection(settings) < MIB
    one, many = worst_case(settings, 1, connections=1), worst_case(settings, 1, connections=1001)
    assert many["relay"] - one["relay"] == 1000 * relay_connection(settings)
    assert one["relay held bytes (body copies, connect buffers)"] == settings.proxy_held_bytes
