"""The live dashboards and alerts: current JSON, promtool unit tests, and every query on a real Prometheus.

The real scorer (`semif-shadow serve`, the embedded model) and the real sidecar (`sidecar run`) are
scraped every second by Debian's Prometheus, which also loads the alerting rules.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from dashboards.live import GRAFANA_DIR, every_query, rendered
from tests.harness import free_port
from tests.shadow.harness import ticket_type, write_catalog

if TYPE_CHECKING:
    from collections.abc import Iterator

RULES = Path(__file__).resolve().parents[2] / "dashboards" / "prometheus"
CLI = Path(sys.executable).with_name("semif-shadow")


def test_the_grafana_json_is_generated_from_the_code() -> None:
    """dashboards/grafana/*.json equal what `python -m dashboards.live` writes; provisioning is valid YAML."""
    for name, text in rendered().items():
        assert (GRAFANA_DIR / name).read_text(encoding="utf-8") == text, (
            f"rerun python -m dashboards.live: {name}"
        )
    provisioning = yaml.safe_load((GRAFANA_DIR / "provisioning.yaml").read_text(encoding="utf-8"))
    assert provisioning["providers"][0]["type"] == "file"


def test_promtool_checks_and_unit_tests_the_alerts() -> None:
    """`promtool check rules` and `promtool test rules`: each alert fires on its synthetic series."""
    promtool = shutil.which("promtool")
    assert promtool, "promtool missing: `make` installs Debian's prometheus"
    for args in (["check", "rules", "alerts.yml"], ["test", "rules", "alerts_test.yml"]):
        done = subprocess.run([promtool, *args], cwd=RULES, capture_output=True, text=True, check=False)  # noqa: S603
        assert done.returncode == 0, done.stdout + done.stderr


def wait_for(url: str, timeout: float = 60) -> None:
    """Poll ``url`` until it answers 200."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url, timeout=1) as answer:  # noqa: S310  (loopback)
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} did not answer")


def query(prometheus: str, expr: str) -> dict[str, Any]:
    """One instant query through the HTTP API."""
    url = f"{prometheus}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
    with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310  (loopback)
        return dict(json.load(answer))


def decide(sidecar: str) -> None:
    """Mirror three decisions through the sidecar's API so its per-type series exist."""
    body = {
        "decisions": [
            {"decision_type": "tickets", "decision_id": f"d-{i}", "state": {"text": "charged twice"}}
            for i in range(3)
        ]
    }
    request = urllib.request.Request(  # noqa: S310  (loopback)
        f"{sidecar}/v1/decisions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310  (loopback)
        assert answer.status == 202


@dataclass(frozen=True)
class Scraped:
    """Prometheus's base URL and the exporters it scrapes."""

    base: str
    exporters: list[str]

    def declared_without_samples(self) -> set[str]:
        """Metric families an exporter declares (``# TYPE``) but has no sample of yet (no label children)."""
        found: set[str] = set()
        for url in self.exporters:
            with urllib.request.urlopen(url, timeout=10) as answer:  # noqa: S310  (loopback)
                text = answer.read().decode()
            for family in re.findall(r"^# TYPE (\S+) ", text, flags=re.MULTILINE):
                if not re.search(rf"^{family}(_total|_bucket|_info)?[{{ ]", text, flags=re.MULTILINE):
                    found |= {family, f"{family}_total"}
        return found


@pytest.fixture
def prometheus(model_path: Path, tmp_path: Path) -> Iterator[Scraped]:
    """A real Prometheus scraping a real scorer and a real sidecar every second; its base URL."""
    prom = shutil.which("prometheus")
    assert prom, "prometheus missing: `make` installs Debian's prometheus"
    scorer_port, sidecar_port, prom_port = free_port(), free_port(), free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SHADOW_", "SCORER_"))}
    procs = [
        subprocess.Popen(  # noqa: S603  (our own console script)
            [str(CLI), "serve", "--port", str(scorer_port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env | {"SCORER_MODEL_PATH": str(model_path), "SCORER_N_CTX": "1024", "SCORER_N_THREADS": "1"},
        )
    ]
    scorer = {"timeout_s": 20.0, "deadline_s": 30.0}
    catalog = write_catalog(
        tmp_path, {"tickets": ticket_type(f"http://127.0.0.1:{scorer_port}", scorer=scorer)}
    )
    procs.append(
        subprocess.Popen(  # noqa: S603
            [str(CLI), "sidecar", "run", "--catalog", str(catalog), "--port", str(sidecar_port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env
            | {
                "SHADOW_RECORDS_ROOT": str(tmp_path / "records"),
                "SHADOW_REDACTION_KEY": "k" * 32,
                "SHADOW_RECORDS_SPOOL_DIR": str(tmp_path / "spool"),
            },
        )
    )
    config = tmp_path / "prometheus.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                "rule_files": [str(RULES / "alerts.yml")],
                "scrape_configs": [
                    {"job_name": "scorer", "static_configs": [{"targets": [f"127.0.0.1:{scorer_port}"]}]},
                    {"job_name": "sidecar", "static_configs": [{"targets": [f"127.0.0.1:{sidecar_port}"]}]},
                ],
            }
        ),
        encoding="utf-8",
    )
    procs.append(
        subprocess.Popen(  # noqa: S603
            [
                prom,
                f"--config.file={config}",
                f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                f"--web.listen-address=127.0.0.1:{prom_port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    )
    try:
        base = f"http://127.0.0.1:{prom_port}"
        wait_for(f"http://127.0.0.1:{scorer_port}/ping")
        wait_for(f"{base}/-/ready")
        wait_for(f"http://127.0.0.1:{sidecar_port}/healthz")
        decide(f"http://127.0.0.1:{sidecar_port}")
        end = time.monotonic() + 90
        while not query(base, "count_over_time(shadow_scored_total[1m]) >= 3 and on() sum(up) == 2")["data"][
            "result"
        ]:
            assert time.monotonic() < end, "Prometheus did not scrape a scored decision from both"
            time.sleep(0.5)
        yield Scraped(base, [f"http://127.0.0.1:{p}/metrics" for p in (scorer_port, sidecar_port)])
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=30)


def metrics_in(expr: str) -> set[str]:
    """The project's metric names an expression reads."""
    return {m.removesuffix("_bucket") for m in re.findall(r"\b((?:semif|shadow|process)_[a-z_]+)", expr)}


def test_every_panel_query_returns_series_and_every_alert_evaluates(prometheus: Scraped) -> None:
    """Each panel query executes and returns series; each alert expression executes and loads healthy.

    A panel may be empty only when its metric has no label child yet (drops, or timeouts the breaker
    excused, by reason: none happened).
    """
    with urllib.request.urlopen(f"{prometheus.base}/api/v1/label/__name__/values", timeout=10) as answer:  # noqa: S310
        names = set(json.load(answer)["data"])
    childless = prometheus.declared_without_samples()
    exempt = {m for expr in every_query() for m in metrics_in(expr)} & childless
    # no drop and no excused timeout happened: by-reason children come with the first one
    assert exempt <= {"shadow_dropped_total", "shadow_breaker_starved_total"}, exempt
    for expr in every_query():
        answer = query(prometheus.base, expr)
        assert answer["status"] == "success", (expr, answer)
        if not metrics_in(expr) & childless:
            assert answer["data"]["result"], f"no series: {expr}"
    rules = yaml.safe_load((RULES / "alerts.yml").read_text(encoding="utf-8"))["groups"][0]["rules"]
    for rule in rules:
        assert query(prometheus.base, rule["expr"])["status"] == "success", rule["expr"]
        unknown = {m for m in metrics_in(rule["expr"]) if m not in names and f"{m}_bucket" not in names}
        assert unknown <= childless, (rule["alert"], unknown)
    with urllib.request.urlopen(f"{prometheus.base}/api/v1/rules", timeout=10) as answer:  # noqa: S310
        loaded = json.load(answer)["data"]["groups"][0]["rules"]
    assert len(loaded) == len(rules)
    assert all(rule["health"] == "ok" for rule in loaded), loaded
