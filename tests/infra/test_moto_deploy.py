"""storage.yaml, iam.yaml and monitoring.yaml deployed to moto in server mode, then read back.

tests/infra/deploy.py turns each resource into the service calls CloudFormation makes. The roles' least
privilege is exercised with moto's IAM enforcement: each role's own credentials try what its workload does and
what it must not do.
"""

from __future__ import annotations

import json
import urllib.request
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.exceptions import ClientError

from tests.infra.cfn import REGION, Stack, load
from tests.infra.deploy import client, deploy

if TYPE_CHECKING:
    from collections.abc import Iterator

MODEL_BUCKET = "semif-shadow-model-123456789012-us-east-1"
RECORDS_BUCKET = "semif-shadow-records-123456789012-us-east-1"


@pytest.fixture(scope="module")
def deployed(moto_endpoint: str) -> dict[str, dict[str, str]]:
    """The three stacks, deployed in the documented order; physical ids by logical id."""
    physical = deploy(Stack(load("storage.yaml")), moto_endpoint)
    names = {"ModelBucketName": physical["ModelBucket"]["Ref"],
             "RecordsBucketName": physical["RecordsBucket"]["Ref"]}
    physical |= deploy(Stack(load("iam.yaml"), names), moto_endpoint)
    physical |= deploy(Stack(load("monitoring.yaml")), moto_endpoint)
    return physical


@contextmanager
def iam_enforced(endpoint: str) -> Iterator[None]:
    """Every request to moto is authenticated and checked against IAM policies until the block ends."""
    def reset(count: str) -> None:
        request = urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=count.encode(),  # noqa: S310
                                         headers={"Content-Type": "text/plain"}, method="POST")
        urllib.request.urlopen(request).close()  # noqa: S310  (moto on loopback)
    reset("0")
    try:
        yield
    finally:
        reset("inf")


@contextmanager
def tls_policies_lifted(endpoint: str) -> Iterator[None]:
    """Both buckets without their TLS-only policy (moto speaks plain HTTP here), restored after."""
    s3 = client("s3", endpoint)
    policies = {b: s3.get_bucket_policy(Bucket=b)["Policy"] for b in (MODEL_BUCKET, RECORDS_BUCKET)}
    for bucket in policies:
        s3.delete_bucket_policy(Bucket=bucket)
    try:
        yield
    finally:
        for bucket, policy in policies.items():
            s3.put_bucket_policy(Bucket=bucket, Policy=policy)


def as_role(endpoint: str, role_arn: str, service: str) -> Any:
    """A client signed with the credentials of an assumed role."""
    credentials = client("sts", endpoint).assume_role(RoleArn=role_arn, RoleSessionName="test")["Credentials"]
    return boto3.client(service, endpoint_url=endpoint, region_name=REGION,
                        aws_access_key_id=credentials["AccessKeyId"],
                        aws_secret_access_key=credentials["SecretAccessKey"],
                        aws_session_token=credentials["SessionToken"])


def allowed(call: Any, **kwargs: Any) -> bool:
    """Whether moto's IAM enforcement let the call through."""
    try:
        call(**kwargs)
    except ClientError as exc:
        status = exc.response["ResponseMetadata"]["HTTPStatusCode"]
    else:
        return True
    assert status == 403, status
    return False


@pytest.mark.parametrize("bucket", [MODEL_BUCKET, RECORDS_BUCKET])
@pytest.mark.usefixtures("deployed")
def test_buckets_are_encrypted_private_and_versioned(moto_endpoint: str, bucket: str) -> None:
    """Both buckets: SSE by default, every public access blocked, ACLs off, versioning on, TLS only."""
    s3 = client("s3", moto_endpoint)
    (rule,) = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    assert rule["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    block = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert block == {"BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True,
                     "RestrictPublicBuckets": True}
    (ownership,) = s3.get_bucket_ownership_controls(Bucket=bucket)["OwnershipControls"]["Rules"]
    assert ownership["ObjectOwnership"] == "BucketOwnerEnforced"
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    (statement,) = json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"])["Statement"]
    assert statement["Effect"] == "Deny"
    assert statement["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


@pytest.mark.usefixtures("deployed")
def test_records_lifecycle_ages_expires_and_cleans_up(moto_endpoint: str) -> None:
    """Records go to Standard-IA then expire; query results expire; parts and old versions are cleaned."""
    rules = {r["ID"]: r for r in client("s3", moto_endpoint)
             .get_bucket_lifecycle_configuration(Bucket=RECORDS_BUCKET)["Rules"]}
    records = rules["records-infrequent-access-then-expire"]
    assert records["Filter"] == {"Prefix": "records/"}
    assert records["Transitions"] == [{"Days": 60, "StorageClass": "STANDARD_IA"}]
    assert records["Expiration"] == {"Days": 730}
    assert rules["athena-results-expire"]["Expiration"] == {"Days": 30}
    assert rules["abort-incomplete-uploads"]["AbortIncompleteMultipartUpload"] == {"DaysAfterInitiation": 1}
    assert rules["noncurrent-versions"]["NoncurrentVersionExpiration"]["NoncurrentDays"] == 30


def test_roles_are_assumable_only_by_their_service(deployed: dict[str, Any], moto_endpoint: str) -> None:
    """Each role trusts exactly one service principal, in this account only.

    SageMaker, EKS Pod Identity (sidecar and weekly job) and CodeBuild.
    """
    iam = client("iam", moto_endpoint)
    expected = {"ScorerExecutionRole": "sagemaker.amazonaws.com", "SidecarRole": "pods.eks.amazonaws.com",
                "PipelinesJobRole": "pods.eks.amazonaws.com", "ImageBuildRole": "codebuild.amazonaws.com"}
    for logical_id, service in expected.items():
        role = iam.get_role(RoleName=deployed[logical_id]["Ref"])["Role"]
        document = role["AssumeRolePolicyDocument"]
        document = json.loads(document) if isinstance(document, str) else document
        (statement,) = document["Statement"]
        assert statement["Principal"] == {"Service": service}
        assert statement["Condition"]["StringEquals"] == {"aws:SourceAccount": "123456789012"}


def test_tls_only_policy_refuses_plain_http(deployed: dict[str, Any], moto_endpoint: str) -> None:
    """The buckets' TLS-only policy is in force.

    With moto enforcing IAM and bucket policies, a write the sidecar's role allows is refused over plain
    HTTP (the next test, with the policy lifted, shows the same write allowed).
    """
    sidecar = as_role(moto_endpoint, deployed["SidecarRole"]["Arn"], "s3")
    with iam_enforced(moto_endpoint):
        key = "records/outcomes/t.parquet"
        assert not allowed(sidecar.put_object, Bucket=RECORDS_BUCKET, Key=key, Body=b"o")


def test_each_role_reaches_only_its_own_prefixes(deployed: dict[str, Any], moto_endpoint: str) -> None:
    """Each role reaches only its own bucket prefixes.

    With moto enforcing IAM (TLS-only policies lifted: moto is plain HTTP): the sidecar writes records but
    reads nothing back and touches no mart; the weekly job reads records and writes marts but never the
    model bucket; the scorer reads models and writes nothing.
    """
    sidecar = as_role(moto_endpoint, deployed["SidecarRole"]["Arn"], "s3")
    job = as_role(moto_endpoint, deployed["PipelinesJobRole"]["Arn"], "s3")
    scorer = as_role(moto_endpoint, deployed["ScorerExecutionRole"]["Arn"], "s3")
    with tls_policies_lifted(moto_endpoint):
        s3 = client("s3", moto_endpoint)
        s3.put_object(Bucket=RECORDS_BUCKET, Key="records/proposals/x.parquet", Body=b"p")
        s3.put_object(Bucket=MODEL_BUCKET, Key="models/abc/model.gguf", Body=b"g")
        check_least_privilege(sidecar, job, scorer, moto_endpoint)


def check_least_privilege(sidecar: Any, job: Any, scorer: Any, moto_endpoint: str) -> None:
    """The allowed and refused calls of each role's S3 client, with IAM enforced."""
    with iam_enforced(moto_endpoint):
        assert allowed(sidecar.put_object, Bucket=RECORDS_BUCKET, Key="records/outcomes/y.parquet", Body=b"o")
        assert not allowed(sidecar.get_object, Bucket=RECORDS_BUCKET, Key="records/proposals/x.parquet")
        assert not allowed(sidecar.put_object, Bucket=RECORDS_BUCKET, Key="marts/funnel/z.parquet", Body=b"m")
        assert not allowed(sidecar.delete_object, Bucket=RECORDS_BUCKET, Key="records/proposals/x.parquet")
        assert allowed(job.get_object, Bucket=RECORDS_BUCKET, Key="records/proposals/x.parquet")
        assert allowed(job.put_object, Bucket=RECORDS_BUCKET, Key="marts/funnel/w.parquet", Body=b"m")
        assert not allowed(job.get_object, Bucket=MODEL_BUCKET, Key="models/abc/model.gguf")
        assert not allowed(job.put_object, Bucket=RECORDS_BUCKET, Key="athena-results/q.csv", Body=b"q")
        assert allowed(scorer.get_object, Bucket=MODEL_BUCKET, Key="models/abc/model.gguf")
        assert not allowed(scorer.put_object, Bucket=MODEL_BUCKET, Key="models/abc/other.gguf", Body=b"x")
        assert not allowed(scorer.get_object, Bucket=RECORDS_BUCKET, Key="records/proposals/x.parquet")


def test_sidecar_may_invoke_only_its_endpoint(deployed: dict[str, Any], moto_endpoint: str) -> None:
    """The sidecar's only non-S3 permission is InvokeEndpoint on the scorer endpoint's ARN."""
    policy = client("iam", moto_endpoint).get_role_policy(RoleName=deployed["SidecarRole"]["Ref"],
                                                          PolicyName="sidecar")["PolicyDocument"]
    invoke = [s for s in policy["Statement"] if not s["Action"][0].startswith("s3:")]
    assert invoke == [{"Sid": "InvokeScorer", "Effect": "Allow", "Action": "sagemaker:InvokeEndpoint",
                       "Resource": "arn:aws:sagemaker:us-east-1:123456789012:endpoint/semif-scorer"}]


def test_alarms_deploy_with_their_metrics(deployed: dict[str, Any], moto_endpoint: str) -> None:
    """All seven alarms deploy and notify the stack's topic.

    The classic ones keep their metric; moto stores no PromQL criteria (their shape is checked by botocore
    in test_alarms.py).
    """
    found = {a["AlarmName"]: a for a in client("cloudwatch", moto_endpoint)
             .describe_alarms(AlarmNamePrefix="semif-scorer-")["MetricAlarms"]}
    assert len(found) == 7
    topic = deployed["AlarmTopic"]["Ref"]
    assert all(a["AlarmActions"] == [topic] for a in found.values())
    assert found["semif-scorer-model-latency-p99"]["ExtendedStatistic"] == "p99"
    assert found["semif-scorer-model-load-failed"]["Namespace"] == "SemIf/Scorer/semif-scorer"
    math = {q["Id"] for q in found["semif-scorer-placed-instance-type"]["Metrics"]}
    assert math == {"all", "preferred", "others"}


@pytest.mark.usefixtures("deployed")
def test_log_group_and_metric_filter_exist_before_the_endpoint(moto_endpoint: str) -> None:
    """The endpoint's log group has our retention and carries the model-load metric filter."""
    logs = client("logs", moto_endpoint)
    groups = logs.describe_log_groups(logGroupNamePrefix="/aws/sagemaker/Endpoints/semif-scorer")
    (group,) = groups["logGroups"]
    assert group["retentionInDays"] == 30
    (metric_filter,) = logs.describe_metric_filters(logGroupName=group["logGroupName"])["metricFilters"]
    assert metric_filter["metricTransformations"][0]["metricName"] == "ModelLoadFailures"
