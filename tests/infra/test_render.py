"""`semif-shadow infra render`: parameters from a real release record, accepted by template and scorer.

The rendered scorer-endpoint parameters satisfy the template's constraints, resolve to SageMaker calls
that pass botocore's validation, and give each pool's container the settings under which a real scorer
loads and accepts that same release record (the check `serve` makes at start).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from contracts.catalog import load_catalog
from contracts.errors import SettingsError
from scorer.server.main import _released
from scorer.settings import ScorerSettings
from semif_shadow.infra import iso_weeks
from tests.infra.cfn import Stack, load
from tests.infra.harness import sagemaker_call

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("semif-shadow"))
DIGEST = "sha256:" + "11" * 32
REPO = "123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-scorer"
POOLS = ["ml.c6i.8xlarge", "ml.c7i.8xlarge"]


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603  (our own console script, fixed arguments)
        [CLI, *args], env=env, capture_output=True, text=True, check=False, cwd=ROOT)


@pytest.fixture(scope="module")
def record_file(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A release record of the embedded model for a CPU fleet of two pools."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCORER_")}
    env.update(SCORER_N_THREADS="2", SCORER_N_CTX="1024")
    pools = [arg for pool in POOLS for arg in ("--instance-type", pool)]
    done = _cli("release-record", str(model_path), "--image-digest", DIGEST, *pools, env=env)
    assert done.returncode == 0, done.stderr
    path = tmp_path_factory.mktemp("render") / "release.json"
    path.write_text(done.stdout)
    return path


@pytest.fixture(scope="module")
def rendered(record_file: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The scorer-endpoint parameter file, rendered from the record, images.json and the IAM stack."""
    folder = tmp_path_factory.mktemp("inputs")
    other = f"sha256:{'22' * 32}"
    images = {"images": {"cpu": {"image_uri": f"{REPO}@{DIGEST}", "digest": DIGEST},
                         "cuda": {"image_uri": f"{REPO}@{other}", "digest": other}}}
    (folder / "images.json").write_text(json.dumps(images))
    outputs = {"Stacks": [{"Outputs": [{"OutputKey": "ScorerExecutionRoleArn",
                                        "OutputValue": "arn:aws:iam::123456789012:role/scorer"}]}]}
    (folder / "iam.json").write_text(json.dumps(outputs))
    done = _cli("infra", "render", "--template", "scorer-endpoint", "--release", str(record_file),
                "--images", str(folder / "images.json"), "--model-bucket", "models-bucket",
                "--stack-outputs", str(folder / "iam.json"), "--set", "EndpointName=semif-cpu",
                "--set", "InferenceAmiVersion=")
    assert done.returncode == 0, done.stderr
    return {row["ParameterKey"]: row["ParameterValue"] for row in json.loads(done.stdout)}


def test_release_values_fill_the_endpoint(rendered: dict[str, str], record_file: Path) -> None:
    """Hashes, image, model prefix, role, settings and pools come from their sources."""
    record = json.loads(record_file.read_text())
    assert rendered["ModelSha256"] == record["model"]["sha256"]
    assert rendered["ReleaseRecordSha256"] == hashlib.sha256(record_file.read_bytes()).hexdigest()
    assert rendered["ImageUri"] == f"{REPO}@{DIGEST}"
    assert rendered["ModelDataUrl"] == f"s3://models-bucket/models/{record['model']['sha256']}/"
    assert rendered["ExecutionRoleArn"] == "arn:aws:iam::123456789012:role/scorer"
    assert (rendered["NThreads"], rendered["NCtx"], rendered["NGpuLayers"]) == ("2", "1024", "0")
    assert [rendered[f"PoolType{i}"] for i in range(1, 5)] == [*POOLS, "", ""]


def test_each_pool_s_container_runs_a_scorer_that_accepts_the_record(
    rendered: dict[str, str], record_file: Path, model_path: Path
) -> None:
    """The resolved CreateModel calls validate, and their SCORER_* environment passes `serve`'s check."""
    stack = Stack(load("scorer-endpoint.yaml"), rendered)
    models = stack.resources("AWS::SageMaker::Model")
    assert len(models) == len(POOLS)
    for props in models.values():
        call: dict[str, Any] = sagemaker_call("CreateModel", {"ModelName": "m", **props})
        environment = call["PrimaryContainer"]["Environment"]
        env = {k.removeprefix("SCORER_").lower(): v for k, v in environment.items()}
        assert env["release_record"] == "/opt/ml/model/release.json"
        settings = ScorerSettings.model_validate(
            {**env, "model_path": model_path, "release_record": record_file})
        engine = _released(settings)(settings)
        engine.close()


def test_a_set_that_contradicts_the_release_is_refused(record_file: Path) -> None:
    """`--set NThreads=8` against a record pinned at 2 threads: exit 2, both values named."""
    done = _cli("infra", "render", "--template", "scorer-endpoint", "--release", str(record_file),
                "--image-repository", REPO, "--model-bucket", "b", "--set", "NThreads=8")
    assert done.returncode == 2
    assert "NThreads=8 (the release record pins 2)" in done.stderr


def test_missing_and_malformed_values_are_named(record_file: Path) -> None:
    """No role: the parameter is named; a bad week range: the option is named."""
    done = _cli("infra", "render", "--template", "scorer-endpoint", "--release", str(record_file),
                "--image-repository", REPO, "--model-bucket", "b")
    assert done.returncode == 2
    assert "ExecutionRoleArn" in done.stderr
    for first, last in (("2026-W99", "2027-W01"), ("2026-W5", "2026-W06"), ("2026-W05", "2026-W05x")):
        with pytest.raises(SettingsError, match="--weeks"):  # parsed by pipelines.weeks
            iso_weeks(first, last)


def test_athena_parameters_from_the_catalog_and_a_week_range() -> None:
    """DecisionTypes from the catalog's keys; MartWeeks spans ISO years (2026 has 53 weeks)."""
    catalog = ROOT / "shadow" / "examples" / "catalog.yaml"
    done = _cli("infra", "render", "--template", "athena", "--catalog", str(catalog),
                "--weeks", "2026-W52:2027-W02", "--set", "RecordsBucketName=records-bucket")
    assert done.returncode == 0, done.stderr
    values = {row["ParameterKey"]: row["ParameterValue"] for row in json.loads(done.stdout)}
    assert values["MartWeeks"] == "2026-W52,2026-W53,2027-W01,2027-W02"
    assert values["DecisionTypes"].split(",") == sorted(load_catalog(catalog).decision_types)
    Stack(load("athena.yaml"), values)
