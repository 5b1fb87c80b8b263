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
    it ever holds; the 4-connection figure is what the soak's load can reach.
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
