"""Deploy a template's resources to an AWS API (moto's server here) the way CloudFormation does.

Each resource's resolved properties become the service calls that create and configure it, in template order;
later resources see earlier ones' physical names through Ref and GetAtt.

moto's own CloudFormation applies only a few bucket properties (encryption, tags), so it would let a wrong
lifecycle rule or public-access block pass unseen. Calling the services directly makes moto validate, store
and return every property the tests then read back.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3

from tests.infra.cfn import ACCOUNT, REGION, Stack, coerce

Deployer = Callable[[str, dict[str, Any]], dict[str, str]]


def client(service: str, endpoint: str) -> Any:
    """A boto3 client for ``service`` on ``endpoint`` with the dummy credentials of the environment."""
    return boto3.client(service, endpoint_url=endpoint, region_name=REGION)


def _lifecycle_rule(rule: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"ID": rule["Id"], "Status": rule["Status"],
                           "Filter": {"Prefix": rule.get("Prefix", "")}}
    if "Transitions" in rule:
        out["Transitions"] = [{"Days": int(t["TransitionInDays"]), "StorageClass": t["StorageClass"]}
                              for t in rule["Transitions"]]
    if "ExpirationInDays" in rule:
        out["Expiration"] = {"Days": int(rule["ExpirationInDays"])}
    if "NoncurrentVersionExpiration" in rule:
        days = int(rule["NoncurrentVersionExpiration"]["NoncurrentDays"])
        out["NoncurrentVersionExpiration"] = {"NoncurrentDays": days}
    if "AbortIncompleteMultipartUpload" in rule:
        days = int(rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"])
        out["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": days}
    return out


def s3_bucket(endpoint: str, props: dict[str, Any]) -> dict[str, str]:
    """AWS::S3::Bucket: create, then encryption, public access block, ownership, versioning, lifecycle."""
    s3, name = client("s3", endpoint), props["BucketName"]
    s3.create_bucket(Bucket=name)
    rules = [{"ApplyServerSideEncryptionByDefault": r["ServerSideEncryptionByDefault"],
              "BucketKeyEnabled": r["BucketKeyEnabled"]}
             for r in props["BucketEncryption"]["ServerSideEncryptionConfiguration"]]
    s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration={"Rules": rules})
    s3.put_public_access_block(Bucket=name,
                               PublicAccessBlockConfiguration=props["PublicAccessBlockConfiguration"])
    s3.put_bucket_ownership_controls(Bucket=name, OwnershipControls=props["OwnershipControls"])
    s3.put_bucket_versioning(Bucket=name, VersioningConfiguration=props["VersioningConfiguration"])
    lifecycle = {"Rules": [_lifecycle_rule(r) for r in props["LifecycleConfiguration"]["Rules"]]}
    s3.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration=lifecycle)
    s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": props["Tags"]})
    return {"Ref": name, "Arn": f"arn:aws:s3:::{name}"}


def s3_bucket_policy(endpoint: str, props: dict[str, Any]) -> dict[str, str]:
    """AWS::S3::BucketPolicy."""
    policy = json.dumps(props["PolicyDocument"])
    client("s3", endpoint).put_bucket_policy(Bucket=props["Bucket"], Policy=policy)
    return {"Ref": props["Bucket"]}


def iam_role(endpoint: str, props: dict[str, Any]) -> dict[str, str]:
    """AWS::IAM::Role with its inline policies."""
    iam, name = client("iam", endpoint), props["RoleName"]
    trust = json.dumps(props["AssumeRolePolicyDocument"])
    role = iam.create_role(RoleName=name, AssumeRolePolicyDocument=trust, Tags=props.get("Tags", []))["Role"]
    for policy in props.get("Policies", []):
        iam.put_role_policy(RoleName=name, PolicyName=policy["PolicyName"],
                            PolicyDocument=json.dumps(policy["PolicyDocument"]))
    return {"Ref": name, "Arn": role["Arn"]}


def sns_topic(endpoint: str, props: dict[str, Any]) -> dict[str, str]:
    """AWS::SNS::Topic (Ref is the topic ARN)."""
    sns = client("sns", endpoint)
    arn = sns.create_topic(Name=props["TopicName"], Tags=props.get("Tags", []))["TopicArn"]
    return {"Ref": arn, "TopicArn": arn}


def log_group(endpoint: str, props: dict[str, Any]) -> dict[str, str]:
    """AWS::Logs::LogGroup with its retention."""
    logs, name = client("logs", endpoint), props["LogGroupName"]
    logs.create_log_group(logGroupName=name)
    logs.put_retention_policy(logGroupName=name, retentionInDays=int(props["RetentionInDays"]))
    return {"Ref": name, "Arn": f"arn:aws:logs:{REGION}:{ACCOUNT}:log-group:{name}:*"}


def metric_filter(endpoint: str, props: dict[str, Any]) -> dict[str, str]:
    """AWS::Logs::MetricFilter."""
    transformations = [{"metricNamespace": t["MetricNamespace"], "metricName": t["MetricName"],
                        "metricValue": t["MetricValue"]} for t in props["MetricTransformations"]]
    client("logs", endpoint).put_metric_filter(
        logGroupName=props["LogGroupName"], filterName=props["FilterName"],
        filterPattern=props["FilterPattern"], metricTransformations=transformations,
    )
    return {"Ref": props["FilterName"]}


def alarm(endpoint: str, props: dict[str, Any]) -> dict[str, str]:
    """AWS::CloudWatch::Alarm (PutMetricAlarm takes the CloudFormation properties as they are)."""
    cloudwatch = client("cloudwatch", endpoint)
    shape = cloudwatch.meta.service_model.operation_model("PutMetricAlarm").input_shape
    cloudwatch.put_metric_alarm(**coerce(props, shape))
    name = props["AlarmName"]
    return {"Ref": name, "Arn": f"arn:aws:cloudwatch:{REGION}:{ACCOUNT}:alarm:{name}"}


def glue_database(endpoint: str, props: dict[str, Any]) -> dict[str, str]:
    """AWS::Glue::Database."""
    glue = client("glue", endpoint)
    glue.create_database(CatalogId=props["CatalogId"], DatabaseInput=props["DatabaseInput"])
    return {"Ref": props["DatabaseInput"]["Name"]}


def glue_table(endpoint: str, props: dict[str, Any]) -> dict[str, str]:
    """AWS::Glue::Table."""
    glue = client("glue", endpoint)
    glue.create_table(CatalogId=props["CatalogId"], DatabaseName=props["DatabaseName"],
                      TableInput=props["TableInput"])
    return {"Ref": props["TableInput"]["Name"]}


def athena_workgroup(endpoint: str, props: dict[str, Any]) -> dict[str, str]:
    """AWS::Athena::WorkGroup (its WorkGroupConfiguration is the API's Configuration)."""
    configuration = dict(props["WorkGroupConfiguration"])
    configuration["BytesScannedCutoffPerQuery"] = int(configuration["BytesScannedCutoffPerQuery"])
    athena = client("athena", endpoint)
    athena.create_work_group(Name=props["Name"], Description=props["Description"],
                             Configuration=configuration, Tags=props.get("Tags", []))
    return {"Ref": props["Name"]}


DEPLOYERS: dict[str, Deployer] = {
    "AWS::S3::Bucket": s3_bucket,
    "AWS::S3::BucketPolicy": s3_bucket_policy,
    "AWS::IAM::Role": iam_role,
    "AWS::SNS::Topic": sns_topic,
    "AWS::Logs::LogGroup": log_group,
    "AWS::Logs::MetricFilter": metric_filter,
    "AWS::CloudWatch::Alarm": alarm,
    "AWS::Glue::Database": glue_database,
    "AWS::Glue::Table": glue_table,
    "AWS::Athena::WorkGroup": athena_workgroup,
}


def deploy(stack: Stack, endpoint: str) -> dict[str, dict[str, str]]:
    """Create every resource of ``stack`` that exists (its Condition holds); returns physical ids."""
    for logical_id, resource in stack.template["Resources"].items():
        if not stack.exists(logical_id):
            continue
        create = DEPLOYERS[resource["Type"]]
        stack.physical[logical_id] = create(endpoint, stack.resolve(resource.get("Properties", {})))
    return stack.physical
