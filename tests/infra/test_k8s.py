"""infra/k8s: valid manifests, and the properties the sidecar's promise rests on.

Validated with kubernetes-validate (it bundles the Kubernetes schemas, so it works offline). Also: a catalog
the sidecar accepts, settings the code knows, a sidecar that cannot hold up the app and runs locked down,
secrets only from Secret references, and the weekly CronJob's steps, order, outputs and ISO-week arithmetic.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from pipelines.weeks import Window, as_utc, parse_week
from tests.infra.cfn import ROOT

K8S = ROOT / "infra" / "k8s"
# Native sidecars (restartable init containers) are on by default from 1.29; the newest is bundled.
VERSIONS = ["1.29.0", kubernetes_validate.latest_version()]
DOCUMENTS = [(path.name, doc) for path in sorted(K8S.glob("*.yaml"))
             for doc in yaml.safe_load_all(path.read_text())]
DIGEST = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")


def resource(kind: str, name: str) -> dict[str, Any]:
    """The one manifest document of that kind and name."""
    (doc,) = [d for _, d in DOCUMENTS if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def pod_specs() -> list[dict[str, Any]]:
    """The pod template of every workload (Deployment, CronJob)."""
    deployment = resource("Deployment", "ticket-router")["spec"]["template"]["spec"]
    cronjob = resource("CronJob", "semif-shadow-weekly")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return [deployment, cronjob]


def sidecar() -> dict[str, Any]:
    """The shadow container of the Deployment."""
    spec = resource("Deployment", "ticket-router")["spec"]["template"]["spec"]
    (container,) = [c for c in spec["initContainers"] if c["name"] == "shadow"]
    return container


def catalog_text() -> str:
    """The catalog YAML the ConfigMap carries."""
    return str(resource("ConfigMap", "semif-shadow-catalog")["data"]["catalog.yaml"])


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("doc", [d for _, d in DOCUMENTS], ids=[f"{f}:{d['kind']}" for f, d in DOCUMENTS])
def test_manifest_validates_against_the_kubernetes_schema(doc: dict[str, Any], version: str) -> None:
    """Each document is valid, strictly (no unknown fields), for Kubernetes 1.29 and the newest."""
    kubernetes_validate.validate(doc, version, strict=True)


def test_validator_is_not_vacuous() -> None:
    """The same validation refuses a misspelt field, so a pass means something."""
    broken = {**sidecar(), "restartPolicyy": "Always"}
    deployment = resource("Deployment", "ticket-router")
    spec = {**deployment["spec"]["template"]["spec"], "initContainers": [broken]}
    bad = {**deployment, "spec": {**deployment["spec"], "template": {"spec": spec, "metadata": {}}}}
    with pytest.raises(kubernetes_validate.ValidationError, match="restartPolicyy"):
        kubernetes_validate.validate(bad, VERSIONS[-1], strict=True)


def test_catalog_passes_the_sidecar_s_own_check(tmp_path: Path) -> None:
    """`semif-shadow sidecar check-catalog` accepts the ConfigMap's catalog."""
    path = tmp_path / "catalog.yaml"
    path.write_text(catalog_text())
    binary = Path(sys.executable).with_name("semif-shadow")
    command = [str(binary), "sidecar", "check-catalog", str(path)]
    result = subprocess.run(command, capture_output=True, text=True,  # noqa: S603  (our console script)
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert result.returncode == 0, result.stderr


def test_sidecar_cannot_hold_up_the_app() -> None:
    """Neither the app's start nor the pod's readiness waits on the sidecar.

    A native sidecar (starts first, stops last) with no startup or readiness probe; a liveness probe on
    /healthz restarts it alone.
    """
    container = sidecar()
    assert container["restartPolicy"] == "Always"
    assert "startupProbe" not in container
    assert "readinessProbe" not in container
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"


def test_every_container_is_locked_down_and_bounded() -> None:
    """Every pod and container is locked down and bounded.

    Pods run as a non-root user with the runtime's seccomp profile; every container has a read-only root,
    no privilege escalation, no capabilities, requests and limits, and an image pinned by digest.
    """
    for spec in pod_specs():
        assert spec["securityContext"]["runAsNonRoot"] is True
        assert spec["securityContext"]["runAsUser"] != 0
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        for container in spec.get("initContainers", []) + spec["containers"]:
            context = container["securityContext"]
            assert context["readOnlyRootFilesystem"] is True, container["name"]
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"] == {"drop": ["ALL"]}
            assert {"cpu", "memory"} <= set(container["resources"]["limits"]), container["name"]
            assert {"cpu", "memory"} <= set(container["resources"]["requests"]), container["name"]
            assert DIGEST.match(container["image"]), container["image"]


def test_sidecar_writes_only_to_its_spool_and_tmp() -> None:
    """The sidecar writes only to its spool and /tmp.

    Both are emptyDirs; SHADOW_RECORDS_SPOOL_DIR points at the spool, sized above
    SHADOW_RECORDS_MAX_LOCAL_BYTES; the catalog and kill switch are mounted read-only.
    """
    container = sidecar()
    env = {e["name"]: e.get("value") for e in container["env"]}
    spec = resource("Deployment", "ticket-router")["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    writable = {m["mountPath"]: m["name"] for m in container["volumeMounts"] if not m.get("readOnly")}
    assert writable == {env["SHADOW_RECORDS_SPOOL_DIR"]: "spool", "/tmp": "tmp"}  # noqa: S108  (an emptyDir)
    assert all("emptyDir" in volumes[name] for name in writable.values())
    assert volumes["spool"]["emptyDir"]["sizeLimit"] == "3Gi"
    assert int(env["SHADOW_RECORDS_MAX_LOCAL_BYTES"]) < 3 * 2**30


def test_secrets_come_only_from_secret_references() -> None:
    """The HMAC key and every token the catalog names (auth_token_env) are secretKeyRefs, never values."""
    env = {e["name"]: e for e in sidecar()["env"]}
    tokens = {t["auth_token_env"] for t in yaml.safe_load(catalog_text())["decision_types"].values()
              if t.get("auth_token_env")}
    for name in {"SHADOW_REDACTION_KEY", *tokens}:
        assert "value" not in env[name], name
        assert env[name]["valueFrom"]["secretKeyRef"]["name"] == "semif-shadow"


def test_sidecar_settings_are_ones_the_code_reads() -> None:
    """Every SHADOW_* variable on the sidecar is a setting the code reads.

    A ShadowSettings or RecordSettings field, or a token variable the catalog names: a misspelt setting
    would be ignored silently.
    """
    from shadow.records.settings import RecordSettings  # noqa: PLC0415  (only this test needs them)
    from shadow.settings import ShadowSettings  # noqa: PLC0415

    known = {f"SHADOW_{f.upper()}" for f in ShadowSettings.model_fields}
    known |= {f"SHADOW_RECORDS_{f.upper()}" for f in RecordSettings.model_fields}
    known |= {t["auth_token_env"] for t in yaml.safe_load(catalog_text())["decision_types"].values()}
    names = {e["name"] for e in sidecar()["env"] if e["name"].startswith("SHADOW_")}
    assert names <= known, names - known


def weekly_container() -> dict[str, Any]:
    """The one container of the weekly CronJob's pod."""
    spec = resource("CronJob", "semif-shadow-weekly")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert not spec.get("initContainers")
    (container,) = spec["containers"]
    return container


def maturity_lag() -> dt.timedelta:
    """The lag the job's ConfigMap sets for the pipelines (whole days), which the marts' ``mature`` uses."""
    config = resource("ConfigMap", "semif-shadow-weekly")["data"]
    return dt.timedelta(days=int(config["PIPELINES_MATURITY_LAG_DAYS"]))


def scheduled_instants(count: int) -> list[dt.datetime]:
    """The CronJob's next ``count`` runs (UTC) from 2026-11-01, read from its "M H * * D" schedule."""
    minute, hour, dom, month, weekday = resource("CronJob", "semif-shadow-weekly")["spec"]["schedule"].split()
    assert (dom, month) == ("*", "*")
    first = dt.datetime(2026, 11, 1, int(hour), int(minute), tzinfo=dt.UTC)
    days = (first + dt.timedelta(days=d) for d in range(count * 7 + 7))
    return [d for d in days if d.isoweekday() % 7 == int(weekday)][:count]


def invocation(words: list[str]) -> list[str]:
    """A ``semif-shadow weekly`` command's words from ``weekly`` on, ``$(X)`` / ``${X}`` written ``$X``."""
    words = words[next(i for i, w in enumerate(words) if w == "weekly"):]
    return [re.sub(r"\$[({]([A-Z_]+)[)}]", r"$\1", w) for w in words]


def printed_weekly_lines() -> list[str]:
    """Every line of docs/operations.md's code blocks that runs ``semif-shadow weekly`` on the S3 roots."""
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, flags=re.DOTALL | re.MULTILINE)
    return [line for block in blocks for line in block.replace("\\\n", " ").splitlines()
            if "semif-shadow weekly" in line and "RECORDS_ROOT" in line]


def test_weekly_job_runs_the_weekly_command_into_s3() -> None:
    """The weekly job is one `semif-shadow weekly` run, one at a time, every output root an s3:// URL."""
    cronjob = resource("CronJob", "semif-shadow-weekly")
    assert cronjob["spec"]["concurrencyPolicy"] == "Forbid"
    assert weekly_container()["args"][0] == "weekly"
    config = resource("ConfigMap", "semif-shadow-weekly")["data"]
    assert all(config[k].startswith("s3://") for k in ("RECORDS_ROOT", "MARTS_OUT", "REVIEWS_OUT"))


def test_the_cronjob_runs_the_invocation_the_docs_print() -> None:
    """docs/operations.md's cron and systemd lines run the CronJob's `weekly` command, word for word."""
    lines = printed_weekly_lines()
    assert len(lines) >= 2, lines  # the crontab line and the systemd unit's ExecStart
    manifest = invocation(weekly_container()["args"])
    for line in lines:
        assert invocation(shlex.split(line.split("=", 1)[1] if line.startswith("ExecStart=") else line)) \
            == manifest, line


def test_the_job_s_maturity_lag_is_the_pipelines_setting() -> None:
    """The ConfigMap's lag is the pipelines' maturity_lag_days, and `weekly` reads it from the ConfigMap.

    A lag set only in the manifest, or a default changed only in the code, fails here.
    """
    from pipelines.settings import PipelineSettings  # noqa: PLC0415  (only this test needs it)

    assert maturity_lag() == dt.timedelta(days=PipelineSettings().maturity_lag_days)
    assert {"configMapRef": {"name": "semif-shadow-weekly"}} in weekly_container()["envFrom"]


def test_weekly_job_samples_the_latest_mature_week_soon_after_it_matures() -> None:
    """At each of 60 scheduled runs the sample week is the latest mature one, matured under a day ago.

    The review week is the one before it (its sample has had a week of audits). The runs cross a year end
    and ISO 2026's week 53; maturity is the pipelines' own rule (`pipelines.weeks.Window.is_mature`).
    """
    from semif_shadow.weekly import weeks_for  # noqa: PLC0415  (only this test needs it)

    lag = maturity_lag()
    for now in scheduled_instants(60):
        review, sample = weeks_for(now, lag.days, None)
        assert sample is not None
        monday = parse_week(sample)
        span = Window(monday, monday, 4, now, lag)
        assert span.is_mature(monday), (now, sample)
        assert not span.is_mature(monday + dt.timedelta(weeks=1)), (now, sample)
        assert now - (as_utc(monday + dt.timedelta(weeks=1)) + lag) < dt.timedelta(days=1), (now, sample)
        assert parse_week(review) == monday - dt.timedelta(weeks=1)
