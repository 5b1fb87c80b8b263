"""Prometheus metrics of one server, on its own registry (no process-global state)."""

from __future__ import annotations

from importlib.metadata import version

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, ProcessCollector

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class ServerMetrics:
    """Everything `/metrics` exposes."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "semif_requests_total", "Requests answered, by route and status", ["route", "status"], registry=r
        )
        self.queue_depth = Gauge("semif_queue_depth", "Requests waiting for the model", registry=r)
        self.queue_wait = Histogram(
            "semif_queue_wait_seconds", "Time from arrival to the model", buckets=LATENCY_BUCKETS, registry=r
        )
        self.score_time = Histogram(
            "semif_score_seconds",
            "Time the model spent on one request",
            ["kind"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.overloaded = Counter("semif_overloaded_total", "503 overloaded answers (queue full)", registry=r)
        self.tokens_computed = Counter(
            "semif_tokens_computed_total", "Prompt and option tokens decoded", registry=r
        )
        self.tokens_cached = Counter(
            "semif_tokens_cached_total", "Prompt tokens reused from the prefix cache", registry=r
        )
        self.memo_hits = Counter(
            "semif_memo_hits_total", "Decisions answered from the logit memo (SCORER_LOGIT_MEMO)", registry=r
        )
        self.batch_size = Histogram(
            "semif_batch_decisions",
            "Decisions scored per model call",
            buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
            registry=r,
        )
        self.model_load = Gauge("semif_model_load_seconds", "Time to load the model", registry=r)
        self.ready = Gauge("semif_ready", "1 once the model is loaded", registry=r)
        ProcessCollector(registry=r)
        self.build = Info("semif_build", "Scorer version, and the model identity once loaded", registry=r)
        self.build_version = version("semif-shadow")
        self.build.info({"version": self.build_version})
