"""The live dashboards as code: every Grafana panel's PromQL, and the dashboards' JSON built from it.

Plain generated JSON (Grafana's dashboard schema, version 39), not grafana-foundation-sdk: the panels are
a title, a unit and PromQL, which a dict states as plainly as the SDK's builders, and the JSON stays
diffable. ``python -m dashboards.live`` rewrites ``dashboards/grafana/*.json``; a test checks they are
current and runs every query against a real Prometheus scraping the real sidecar and scorer.
Sidecar panels are per decision type and candidate (the sidecar's ``candidate`` label).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GRAFANA_DIR = Path(__file__).with_name("grafana")
RATE = "[5m]"


@dataclass(frozen=True)
class Panel:
    """One time-series panel: a title, its unit and its queries (legend -> PromQL)."""

    title: str
    unit: str
    queries: dict[str, str]


def quantiles(metric: str, by: str) -> dict[str, str]:
    """p50 / p95 / p99 of a histogram, per ``by``."""
    return {
        f"p{int(q * 100)} {{{{{by}}}}}": (
            f"histogram_quantile({q}, sum by (le, {by}) (rate({metric}_bucket{RATE})))"
        )
        for q in (0.5, 0.95, 0.99)
    }


SIDECAR = (
    Panel(
        "Offered / sampled / scored per type",
        "ops",
        {
            f"{stage} {{{{decision_type}}}} {{{{candidate}}}}": (
                f"sum by (decision_type, candidate) (rate(shadow_{stage}_total{RATE}))"
            )
            for stage in ("offered", "sampled", "scored")
        },
    ),
    Panel(
        "Dropped by reason",
        "ops",
        {
            "{{decision_type}} {{candidate}} {{reason}}": (
                f"sum by (decision_type, candidate, reason) (rate(shadow_dropped_total{RATE}))"
            )
        },
    ),
    Panel(
        "Queue depth per candidate lane",
        "short",
        {"{{candidate}}": "sum by (candidate) (shadow_queue_depth)"},
    ),
    Panel(
        "Queue bytes per candidate lane",
        "bytes",
        {"{{candidate}}": "sum by (candidate) (shadow_queue_bytes)"},
    ),
    Panel("Scorer latency (sidecar side)", "s", quantiles("shadow_scorer_latency_seconds", "candidate")),
    Panel(
        "Breaker state (0 closed, 1 half-open, 2 open)",
        "short",
        {"{{candidate}} {{endpoint}}": "max by (endpoint, candidate) (shadow_breaker_state)"},
    ),
    Panel(
        "Scorer timeouts the breaker excused, by reason",
        "ops",
        {"{{candidate}} {{reason}}":
            f"sum by (candidate, reason) (rate(shadow_breaker_starved_total{RATE}))"},
    ),
    Panel("Rows lost", "ops", {"lost": f"rate(shadow_rows_lost_total{RATE})"}),
    Panel(
        "Record-store uploads",
        "ops",
        {
            "uploads": f"rate(shadow_store_uploads_total{RATE})",
            "errors": f"rate(shadow_store_upload_errors_total{RATE})",
        },
    ),
    Panel("Spool use", "percentunit", {"spool": "shadow_store_spool_bytes / shadow_store_spool_limit_bytes"}),
    Panel(
        "Record backlog refusals (disk full)",
        "ops",
        {"disk full": f"rate(shadow_store_disk_full_total{RATE})"},
    ),
    Panel("Sidecar memory", "bytes", {"rss": 'process_resident_memory_bytes{job="sidecar"}'}),
)
SCORER = (
    Panel(
        "Requests by status",
        "reqps",
        {"{{route}} {{status}}": f"sum by (route, status) (rate(semif_requests_total{RATE}))"},
    ),
    Panel(
        "503 rate",
        "percentunit",
        {
            "503": (
                f"sum(rate(semif_overloaded_total{RATE}))"
                f" / clamp_min(sum(rate(semif_requests_total{RATE})), 1e-9)"
            )
        },
    ),
    Panel("Scoring latency", "s", quantiles("semif_score_seconds", "kind")),
    Panel("Queue wait", "s", quantiles("semif_queue_wait_seconds", "job")),
    Panel("Queue depth", "short", {"waiting": "semif_queue_depth"}),
    Panel(
        "Tokens reused from the prefix cache",
        "percentunit",
        {
            "reused": f"rate(semif_tokens_cached_total{RATE})"
            f" / clamp_min(rate(semif_tokens_cached_total{RATE})"
            f" + rate(semif_tokens_computed_total{RATE}), 1e-9)"
        },
    ),
    Panel(
        "Decisions answered from the logit memo",
        "percentunit",
        {
            "memo": f"rate(semif_memo_hits_total{RATE})"
            f" / clamp_min(rate(semif_batch_decisions_sum{RATE}), 1e-9)"
        },
    ),
    Panel("Ready", "short", {"ready": "semif_ready"}),
    Panel("Build and model", "short", {"{{version}} {{model}} {{sha256}} {{device}}": "semif_build_info"}),
)
DASHBOARDS = {
    "semif-shadow-sidecar": ("Shadow sidecar", SIDECAR),
    "semif-shadow-scorer": ("SemIf scorer", SCORER),
}


def dashboard(uid: str, title: str, panels: tuple[Panel, ...]) -> dict[str, Any]:
    """One Grafana dashboard: two panels a row, each a time series over the Prometheus data source."""
    return {
        "uid": uid,
        "title": title,
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "tags": ["semif-shadow"],
        "templating": {"list": [{"name": "datasource", "type": "datasource", "query": "prometheus"}]},
        "panels": [
            {
                "id": i + 1,
                "type": "timeseries",
                "title": p.title,
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "gridPos": {"x": 12 * (i % 2), "y": 8 * (i // 2), "w": 12, "h": 8},
                "fieldConfig": {"defaults": {"unit": p.unit}, "overrides": []},
                "targets": [
                    {"refId": chr(65 + j), "expr": expr, "legendFormat": legend}
                    for j, (legend, expr) in enumerate(p.queries.items())
                ],
            }
            for i, p in enumerate(panels)
        ],
    }


def every_query() -> list[str]:
    """Every panel's PromQL, in order."""
    return [expr for _, panels in DASHBOARDS.values() for p in panels for expr in p.queries.values()]


def rendered() -> dict[str, str]:
    """File name -> JSON text of every dashboard."""
    return {
        f"{uid}.json": json.dumps(dashboard(uid, title, panels), indent=2) + "\n"
        for uid, (title, panels) in DASHBOARDS.items()
    }


def write(folder: Path = GRAFANA_DIR) -> None:
    """Rewrite the dashboards' JSON files."""
    for name, text in rendered().items():
        (folder / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write()
