"""Prometheus metrics, in a registry owned by the app (no module-level collectors)."""

from __future__ import annotations

from importlib.metadata import version
from typing import TYPE_CHECKING

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    Info,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

if TYPE_CHECKING:
    from collections.abc import Iterator

    from shadow.records.store import StoreStats

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """Every series the sidecar exports (``docs/sidecar.md`` lists them)."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry(auto_describe=True)
        per_candidate = ["decision_type", "candidate"]
        self.offered = Counter("shadow_offered", "Decisions offered", per_candidate, registry=r)
        self.sampled = Counter("shadow_sampled", "Decisions chosen by the sampler", per_candidate, registry=r)
        self.scored = Counter("shadow_scored", "Decisions scored", per_candidate, registry=r)
        self.dropped = Counter("shadow_dropped", "Decisions not scored, by reason",
                               [*per_candidate, "reason"], registry=r)
        self.rows = Counter("shadow_rows", "Proposals rows handed to the store, by status", ["status"],
                            registry=r)
        self.rows_lost = Counter("shadow_rows_lost", "Accepted rows the store refused (marks stay pending)",
                                 registry=r)
        self.drop_summaries = Counter("shadow_drop_summaries", "Decisions counted in drops instead of a row",
                                      [*per_candidate, "reason"], registry=r)
        self.shed = Counter("shadow_shed", "Decisions shed at the door, by the gate that shed them",
                            [*per_candidate, "gate"], registry=r)
        self.lane_throughput = Gauge("shadow_lane_throughput", "Decisions a lane's workers finish per second",
                                     ["candidate"], registry=r)
        self.admit_limit = Gauge("shadow_admit_limit", "Rows the door admits into the backlog",
                                 registry=r)
        self.backlog_items = Gauge("shadow_record_backlog", "Rows waiting for the writer", registry=r)
        self.backlog_bytes = Gauge("shadow_record_backlog_bytes", "Estimated bytes waiting for the writer",
                                   registry=r)
        self.rows_left_at_shutdown = Counter("shadow_rows_left_at_shutdown",
                                             "Rows the shutdown's drain budget did not cover", registry=r)
        self.outcomes_lost = Counter("shadow_outcomes_lost", "Proxy outcomes not written: too many in flight",
                                     registry=r)
        self.api_refused = Counter("shadow_api_refused", "API requests refused before their body was read",
                                   ["reason"], registry=r)
        self.api_body_bytes = Gauge("shadow_api_body_bytes", "Bytes of request bodies being handled (budget)",
                                    registry=r)
        self.loop_lag = Gauge("shadow_loop_lag_seconds", "The event loop's recent lag (max over ~1 s)",
                              registry=r)
        self.breaker_starved = Counter(
            "shadow_breaker_starved",
            ("Scorer timeouts not counted by the breaker: the sidecar's loop lagged, the decision's deadline"
             " cut the call short, or the CPU was contended"),
            ["endpoint", "candidate", "reason"], registry=r)
        self.outcomes = Counter("shadow_outcomes", "Outcomes recorded", ["decision_type", "source"],
                                registry=r)
        self.outcomes_outside = Counter("shadow_outcomes_outside_options",
                                        "Outcomes recorded that are none of the type's options",
                                        ["decision_type", "source"], registry=r)
        self.queue_depth = Gauge("shadow_queue_depth", "Decisions waiting for a worker", ["candidate"],
                                 registry=r)
        self.queue_bytes = Gauge("shadow_queue_bytes", "Bytes of state waiting for a worker", ["candidate"],
                                 registry=r)
        self.scorer_latency = Histogram("shadow_scorer_latency_seconds", "One scorer call",
                                        ["backend", "endpoint", "candidate"], buckets=LATENCY_BUCKETS,
                                        registry=r)
        self.retries = Counter("shadow_scorer_retries", "Scorer calls retried",
                               ["backend", "endpoint", "candidate"], registry=r)
        self.scorer_refused = Counter("shadow_scorer_refused",
                                      "Scorer calls refused (a 4xx, a chat server's answer_mode), by cause",
                                      ["endpoint", "candidate", "cause"], registry=r)
        self.breaker_state = Gauge("shadow_breaker_state", "0 closed, 1 half-open, 2 open",
                                   ["endpoint", "candidate"], registry=r)
        self.kill_switch = Gauge("shadow_kill_switch", "1 while the kill switch is on", registry=r)
        self.proxy_requests = Counter("shadow_proxy_requests", "Requests forwarded", ["status_class"],
                                      registry=r)
        self.proxy_restarts = Counter("shadow_proxy_restarts", "Relay processes restarted after exiting",
                                      registry=r)
        self.proxy_unmirrored = Counter("shadow_proxy_unmirrored", "Proxied requests not mirrored",
                                        ["reason"],
                                        registry=r)
        self.proxy_refused = Counter("shadow_proxy_connections_refused",
                                     "Client connections closed on arrival, unserved, by reason", ["reason"],
                                     registry=r)
        self.log_dropped = Counter("shadow_log_lines_dropped", "Log lines over a request's log budget",
                                   registry=r)
        self.relay_health: dict[str, int] = {}
        """The relay's last report (connections, held bytes, fds, fd_limit), restarts; /healthz shows it."""

        ProcessCollector(registry=r)
        Info("shadow_build", "Sidecar build", registry=r).info({"version": version("semif-shadow")})

    def watch_store(self, stats: StoreStats, max_local_bytes: int) -> None:
        """Export the record store's counters (read at each scrape, nothing copied)."""
        self.registry.register(StoreCollector(stats, max_local_bytes))

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)


class StoreCollector:
    """The record store's ``StoreStats`` as ``shadow_store_*`` series."""

    COUNTERS = (("uploads", "Files uploaded"), ("upload_errors", "Uploads that failed"),
                ("publish_errors", "Segments that failed to publish"),
                ("disk_full", "Rows refused: spool full"),
                ("files_published", "Parquet files published"), ("accepted", "Rows accepted by the store"))

    def __init__(self, stats: StoreStats, max_local_bytes: int) -> None:
        self.stats, self.max_local_bytes = stats, max_local_bytes

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        """One family per counter, and the spool's bytes against its limit."""
        for name, doc in self.COUNTERS:
            yield CounterMetricFamily(f"shadow_store_{name}", doc, value=getattr(self.stats, name))
        yield GaugeMetricFamily("shadow_store_spool_bytes", "Journal plus staged bytes on local disk",
                                value=self.stats.local_bytes)
        yield GaugeMetricFamily("shadow_store_spool_limit_bytes", "Spool size at which rows are refused",
                                value=self.max_local_bytes)
