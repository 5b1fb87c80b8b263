"""The sidecar's and the relay's worst-case memory above their idle size, from the settings.

Every buffer that grows with load has a bound derived from a setting; this module adds them up
(``docs/sidecar.md``, "Memory", shows the table; ``bench/soak.py`` prints it beside the RSS it
measures). Sizes counted in raw JSON bytes are multiplied by ``PARSED_FACTOR``: a parsed state held
as Python objects takes several times its JSON text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shadow.proxy.held import READ_CHUNK
from shadow.recorder import MAX_OUTCOME_WRITES

if TYPE_CHECKING:
    from shadow.settings import ShadowSettings

PARSED_FACTOR = 4
"""Python objects of a parsed JSON state, per byte of its text (dicts, str headers): an upper estimate."""
DECISION_OVERHEAD = 1024
"""A `QueuedDecision` beyond its state (the object, its ids, its accept-mark future)."""
CALL_OVERHEAD = 64 * 1024
"""One scorer call in flight beyond the state: request and response bodies, client buffers."""
HEAD_LIMIT = 64 * 1024
"""The framer's limit on a request or response head (``shadow.proxy.framing``)."""
TRANSPORT_HIGH_WATER = 64 * 1024
"""asyncio's default write-buffer high-water mark: a relay transport pauses its reader past it."""
OUTCOME_WRITE = 4 * 1024
"""One proxy-mode outcome being written (its task, coroutine and row; ids capped at 128 and 256 chars).

Measured with tracemalloc at 2.1 KiB waiting (1,024 tasks); 4 KiB leaves room for the write's own frame.
"""
DROP_KEYS = 4096
"""Drop-summary keys between two flushes (types x candidates x reasons x minutes), 200 bytes each."""


def relay_connection(_settings: ShadowSettings) -> int:
    """Bytes one relay connection may hold outside the relay-wide budget (``SHADOW_PROXY_HELD_BYTES``).

    Two heads being framed, two write buffers, and one read past the budget while the upstream connects
    (it was read before reading paused). Body copies and connect bytes are in the budget.
    """
    return 2 * HEAD_LIMIT + 2 * TRANSPORT_HIGH_WATER + READ_CHUNK


def worst_case(settings: ShadowSettings, candidates: int, connections: int | None = None) -> dict[str, int]:
    """Bytes above idle, per part, and the totals ``sidecar`` and ``relay``.

    ``candidates`` is the number of lanes (candidate names in the catalog). ``connections`` is the client
    connections the relay holds at once: by default ``SHADOW_PROXY_MAX_CONNECTIONS``, the most it ever
    holds (the worst case under any load); a smaller number gives the bound at that load. The API's
    bodies are bounded by ``SHADOW_API_BODY_BUDGET_BYTES`` (`shadow.api.budget`) whatever the load.
    """
    records = settings.records
    connections = settings.proxy_max_connections if connections is None else connections
    lanes = candidates * (settings.queue_max_bytes * PARSED_FACTOR
                          + settings.queue_max_items * DECISION_OVERHEAD)
    calls = candidates * settings.workers * (settings.mirror_max_bytes * PARSED_FACTOR + CALL_OVERHEAD)
    backlog = settings.record_backlog_bytes * PARSED_FACTOR  # items count ROW_OVERHEAD each already
    bodies = max(settings.api_body_budget_bytes, 2 * settings.max_body_bytes)  # one request always fits
    parts = {
        "lanes": lanes,
        "calls in flight": calls,
        "row backlog": backlog,
        "drop summaries": DROP_KEYS * 200,
        "outcome writes in flight": MAX_OUTCOME_WRITES * OUTCOME_WRITE,
        "journal buffer": records.buffer_bytes,
        "roll-over (segment read, Arrow table, Parquet)": 3 * records.roll_bytes,
        "hand-off read (one exchange at a time)": 2 * settings.mirror_max_bytes * PARSED_FACTOR,
        "API bodies being handled (the body budget)": bodies * (1 + PARSED_FACTOR),
    }
    relay = {
        "relay hand-off buffer": settings.proxy_handoff_bytes + 2 * settings.mirror_max_bytes,
        "relay held bytes (body copies, connect buffers)": settings.proxy_held_bytes,
        "relay connections": connections * relay_connection(settings),
    }
    return {**parts, **relay, "sidecar": sum(parts.values()), "relay": sum(relay.values())}
