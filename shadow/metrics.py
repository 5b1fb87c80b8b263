"""Prometheus metrics, in a registry owned by the app (no module-level collectors)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """Every series the sidecar exports (``docs/sidecar.md`` lists them)."""

    def __init__(self) -> None:
        self.registry = r = CollectorRegistry(auto_describe=True)
        self.offered = Counter("shadow_offered", "Decisions offered", ["decision_type"], registry=r)
        self.sampled = Counter("shadow_sampled", "Decisions chosen by the sampler",
                               ["decision_type"], registry=r)
        self.scored = Counter("shadow_scored", "Decisions scored",
                               ["decision_type"], registry=r)
        self.dropped = Counter("shadow_dropped", "Decisions not scored, by reason",
                               ["decision_type", "reason"], registry=r)
        self.rows = Counter("shadow_rows", "Proposals rows handed to the store, by status", ["status"],
                            registry=r)
        self.rows_lost = Counter("shadow_rows_lost", "Rows the record backlog could not take", registry=r)
        self.outcomes = Counter("shadow_outcomes", "Outcomes recorded", ["decision_type", "source"],
                                registry=r)
        self.queue_depth = Gauge("shadow_queue_depth", "Decisions waiting for a worker", registry=r)
        self.queue_bytes = Gauge("shadow_queue_bytes", "Bytes of state waiting for a worker", registry=r)
        self.scorer_latency = Histogram("shadow_scorer_latency_seconds", "One scorer call",
                                        ["backend", "endpoint"], buckets=LATENCY_BUCKETS, registry=r)
        self.retries = Counter("shadow_scorer_retries", "Scorer calls retried", ["backend", "endpoint"],
                               registry=r)
        self.breaker_state = Gauge("shadow_breaker_state", "0 closed, 1 half-open, 2 open", ["endpoint"],
                                   registry=r)
        self.kill_switch = Gauge("shadow_kill_switch", "1 while the kill switch is on", registry=r)
        self.proxy_requests = Counter("shadow_proxy_requests", "Requests forwarded", ["status_class"],
                                      registry=r)
        self.proxy_restarts = Counter("shadow_proxy_restarts", "Relay processes restarted after exiting",
                                      registry=r)
        self.proxy_unmirrored = Counter("shadow_proxy_unmirrored", "Proxied requests not mirrored",
                                        ["reason"],
                                        registry=r)
        self.relay_health: dict[str, int] = {}
        """The relay process's last report (connections, fds, fd_limit) plus restarts; /healthz shows it."""

    def render(self) -> bytes:
        """The text exposition format."""
        return generate_latest(self.registry)
