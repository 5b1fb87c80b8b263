"""The CloudFormation templates: cfn-lint clean, and valid for the APIs they call.

Parameter files stay inside the templates' constraints, and the scorer endpoint's resolved properties pass
botocore's own parameter validation for the SageMaker calls CloudFormation makes (CreateModel,
CreateEndpointConfig).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from cfnlint.api import lint

from tests.infra.cfn import TEMPLATES, Stack, load, parameter_file
from tests.infra.harness import sagemaker_call

TEMPLATE_NAMES = sorted(p.name for p in TEMPLATES.glob("*.yaml"))
GPU_POOLS = ["ml.g6e.xlarge", "ml.g6.2xlarge", "ml.g5.2xlarge", "ml.g4dn.2xlarge"]


def endpoint_stack(params_file: str) -> Stack:
    """scorer-endpoint.yaml resolved with one of its parameter files."""
    return Stack(load("scorer-endpoint.yaml"), parameter_file(params_file))


def endpoint_config(stack: Stack) -> dict[str, Any]:
    """The CreateEndpointConfig request CloudFormation would send for ``stack``."""
    (properties,) = stack.resources("AWS::SageMaker::EndpointConfig").values()
    return sagemaker_call("CreateEndpointConfig", {"EndpointConfigName": "semif-test", **properties})


def models_by_name(stack: Stack) -> dict[str, dict[str, Any]]:
    """Each SageMaker model's CreateModel request, keyed by the name the pools refer to it by."""
    return {
        f"{logical_id.lower()}-modelname": sagemaker_call("CreateModel", {"ModelName": "m", **properties})
        for logical_id, properties in stack.resources("AWS::SageMaker::Model").items()
    }


@pytest.mark.parametrize("name", TEMPLATE_NAMES)
def test_template_passes_cfn_lint(name: str) -> None:
    """cfn-lint (errors and warnings, its default rules, us-east-1) finds nothing in the template."""
    matches = lint((TEMPLATES / name).read_text())
    assert not matches, "\n".join(str(m) for m in matches)


def test_lint_is_not_vacuous() -> None:
    """The same lint call does report a broken template (an unknown property), so a pass means something."""
    broken = "Resources:\n  B:\n    Type: AWS::S3::Bucket\n    Properties:\n      Nope: 1\n"
    assert any(m.rule.id == "E3002" for m in lint(broken))


@pytest.mark.parametrize("params_file", ["scorer-gpu.json", "scorer-cpu.json"])
def test_parameter_files_satisfy_the_template(params_file: str) -> None:
    """Every value in the shipped parameter files is declared and passes its pattern, list and range."""
    endpoint_stack(params_file)  # check_parameters raises on any violation


def test_image_uri_must_be_pinned_by_digest() -> None:
    """ImageUri accepts an ECR image by digest and refuses the same image by tag."""
    pattern = load("scorer-endpoint.yaml")["Parameters"]["ImageUri"]["AllowedPattern"]
    pinned = "123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-scorer@sha256:" + "a" * 64
    assert re.fullmatch(pattern, pinned)
    assert not re.fullmatch(pattern, "123456789012.dkr.ecr.us-east-1.amazonaws.com/semif-scorer:cpu-latest")


@pytest.mark.parametrize("params_file", ["scorer-gpu.json", "scorer-cpu.json"])
def test_endpoint_config_passes_botocore_validation(params_file: str) -> None:
    """CreateEndpointConfig and every CreateModel pass boto3's ParamValidator.

    Built from the resolved properties: instance pools, provisioning timeout, AMI, routing and metrics
    config included.
    """
    stack = endpoint_stack(params_file)
    config = endpoint_config(stack)
    assert config["MetricsConfig"]["EnableDetailedObservability"] is True
    assert models_by_name(stack)


def test_gpu_fleet_tries_its_pools_in_order_each_with_its_own_model() -> None:
    """The GPU fleet tries its four pools in order, each with its own model.

    g6e.xlarge, g6.2xlarge, g5.2xlarge, g4dn.2xlarge at priorities 1-4, with a provisioning timeout; each
    pool runs a model that tells the scorer its instance type.
    """
    stack = endpoint_stack("scorer-gpu.json")
    (variant,) = endpoint_config(stack)["ProductionVariants"]
    pools = variant["InstancePools"]
    assert [p["InstanceType"] for p in pools] == GPU_POOLS
    assert [p["Priority"] for p in pools] == [1, 2, 3, 4]
    assert "InstanceType" not in variant  # pools replace the single type
    assert 300 <= variant["VariantInstanceProvisionTimeoutInSeconds"] <= 3600
    assert variant["InferenceAmiVersion"].startswith("al2023-")  # CUDA 13 needs the newer driver
    models = models_by_name(stack)
    for pool in pools:
        environment = models[pool["ModelNameOverride"]]["PrimaryContainer"]["Environment"]
        assert environment["SCORER_INSTANCE_TYPE"] == pool["InstanceType"]
        assert environment["SCORER_N_GPU_LAYERS"] == "-1"


def test_cpu_fleet_is_one_pool_on_c6i_without_gpu_settings() -> None:
    """The CPU fleet is the same template with one pool, ml.c6i.8xlarge.

    No GPU layers, no GPU AMI, and threads set to the instance's physical cores.
    """
    stack = endpoint_stack("scorer-cpu.json")
    (variant,) = endpoint_config(stack)["ProductionVariants"]
    assert variant["InstancePools"] == [
        {"InstanceType": "ml.c6i.8xlarge", "Priority": 1, "ModelNameOverride": "modelpool1-modelname"}
    ]
    assert "InferenceAmiVersion" not in variant
    (model,) = models_by_name(stack).values()
    environment = model["PrimaryContainer"]["Environment"]
    assert environment["SCORER_N_GPU_LAYERS"] == "0"
    assert environment["SCORER_N_THREADS"] == "16"


def test_models_load_the_pinned_image_and_an_uncompressed_model_prefix() -> None:
    """Each model runs the pinned image and copies the GGUF prefix uncompressed.

    It reports that image's digest (SCORER_IMAGE_DIGEST); a release record is enforced only when its
    sha256 is given.
    """
    stack = endpoint_stack("scorer-gpu.json")
    image = stack.parameters["ImageUri"]
    for model in models_by_name(stack).values():
        container = model["PrimaryContainer"]
        assert container["Image"] == image
        assert container["Environment"]["SCORER_IMAGE_DIGEST"] == image.split("@")[1]
        source = container["ModelDataSource"]["S3DataSource"]
        assert source == {"S3Uri": stack.parameters["ModelDataUrl"], "S3DataType": "S3Prefix",
                          "CompressionType": "None"}
        assert "SCORER_RELEASE_RECORD_SHA256" not in container["Environment"]
    with_record = Stack(load("scorer-endpoint.yaml"),
                        {**parameter_file("scorer-gpu.json"), "ReleaseRecordSha256": "b" * 64})
    for model in models_by_name(with_record).values():
        assert model["PrimaryContainer"]["Environment"]["SCORER_RELEASE_RECORD_SHA256"] == "b" * 64
