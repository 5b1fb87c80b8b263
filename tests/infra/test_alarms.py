"""Every alarm in monitoring.yaml watches a metric something emits, and is a valid request.

Three sources, each checked against the real thing where one runs here:

- SageMaker's own CloudWatch metrics: against the names and dimensions AWS documents (no SageMaker runs here),
  listed below with their pages.
- The scorer's Prometheus series (PromQL alarms over SageMaker detailed observability): against what the real
  `serve` process exposes on /metrics, labels and label values included.
- The scorer's log line (metric filter): the filter pattern is evaluated against the JSON lines the real
  `serve` process writes when its model fails to load.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import pytest
from botocore.validate import ParamValidator
from prometheus_client.parser import text_string_to_metric_families

from tests.infra.cfn import Stack, coerce, load, operation

if TYPE_CHECKING:
    from tests.infra.harness import ScorerRun

# https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html (endpoint invocation and
# instance metrics) and .../realtime-endpoints-heterogeneous.html ("Monitor instance pools": the same
# metrics also carry an InstanceType dimension when a variant uses instance pools).
SAGEMAKER_METRICS = {
    "AWS/SageMaker": {"Invocations", "Invocation4XXErrors", "Invocation5XXErrors", "InvocationModelErrors",
                      "InvocationsPerInstance", "ModelLatency", "OverheadLatency"},
    "/aws/sagemaker/Endpoints": {"CPUUtilization", "MemoryUtilization", "DiskUtilization", "GPUUtilization",
                                 "GPUMemoryUtilization"},
}
SAGEMAKER_DIMENSIONS = {"EndpointName", "VariantName", "InstanceType"}
# Labels SageMaker detailed observability adds to every scraped series
# (https://docs.aws.amazon.com/sagemaker/latest/dg/inference-monitoring.html).
SAGEMAKER_OTEL_LABELS = {"aws.sagemaker.endpoint.name", "aws.sagemaker.variant.name", "@resource.host.type"}
PROMQL_SERIES = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\{([^}]*)\}")
PROMQL_MATCHER = re.compile(r'\s*("[^"]+"|[A-Za-z_][A-Za-z0-9_]*)\s*(=~|!=|!~|=)\s*"([^"]*)"\s*')
FILTER_CLAUSE = re.compile(r'\(\$\.([A-Za-z_]+) = "([^"]*)"\)')


def monitoring() -> Stack:
    """monitoring.yaml with its defaults (the endpoint semif-scorer)."""
    return Stack(load("monitoring.yaml"))


def alarms() -> dict[str, dict[str, Any]]:
    """Every alarm's resolved properties, by logical id."""
    return monitoring().resources("AWS::CloudWatch::Alarm")


def cloudwatch_metrics(alarm: dict[str, Any]) -> list[dict[str, Any]]:
    """The classic CloudWatch metrics an alarm reads (one, or each of a metric-math alarm's)."""
    if "MetricName" in alarm:
        return [{"Namespace": alarm["Namespace"], "MetricName": alarm["MetricName"],
                 "Dimensions": alarm.get("Dimensions", [])}]
    return [q["MetricStat"]["Metric"] for q in alarm.get("Metrics", []) if "MetricStat" in q]


def promql_series(query: str) -> list[tuple[str, dict[str, str]]]:
    """(series name, {label: value}) for each selector with labels in a PromQL query."""
    series = []
    for name, body in PROMQL_SERIES.findall(query):
        matchers = {}
        for part in body.split(","):
            match = PROMQL_MATCHER.fullmatch(part)
            assert match, f"matcher not understood: {part!r}"
            assert match.group(2) == "=", "only equality matchers are checked here"
            matchers[match.group(1).strip('"')] = match.group(3)
        series.append((name, matchers))
    return series


def exposed_samples(metrics_text: str) -> dict[str, list[dict[str, str]]]:
    """Sample name -> label sets, from a Prometheus text exposition."""
    samples: dict[str, list[dict[str, str]]] = {}
    for family in text_string_to_metric_families(metrics_text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(dict(sample.labels))
    return samples


def filter_matches(pattern: str, line: dict[str, Any]) -> bool:
    """Apply a CloudWatch Logs JSON filter pattern to one JSON log event.

    Only the form ``{ ($.a = "x") && ($.b = "y") }`` is understood (the one monitoring.yaml uses); any
    other pattern fails the test.
    """
    clauses = FILTER_CLAUSE.findall(pattern)
    rebuilt = "{ " + " && ".join(f'($.{k} = "{v}")' for k, v in clauses) + " }"
    assert pattern == rebuilt, f"filter pattern outside the checked form: {pattern}"
    return all(line.get(key) == value for key, value in clauses)


@pytest.mark.parametrize("logical_id", sorted(alarms()))
def test_alarm_passes_botocore_validation(logical_id: str) -> None:
    """The alarm, resolved, is a valid PutMetricAlarm request for boto3 (PromQL criteria included)."""
    model = operation("cloudwatch", "PutMetricAlarm")
    params = coerce(alarms()[logical_id], model.input_shape)
    report = ParamValidator().validate(params, model.input_shape)
    assert not report.has_errors(), report.generate_report()


def test_the_issue_s_alarms_are_all_there() -> None:
    """5xx rate, 503 rate, model latency p95 and p99, queue time, load failures, placed instance type."""
    names = {a["AlarmName"].removeprefix("semif-scorer-") for a in alarms().values()}
    assert names == {"5xx-rate", "503-rate", "model-latency-p95", "model-latency-p99", "queue-wait-p95",
                     "model-load-failed", "placed-instance-type"}


def test_sagemaker_alarms_name_documented_sagemaker_metrics() -> None:
    """Each classic metric in the SageMaker namespaces is one SageMaker documents, with its dimensions."""
    seen = 0
    for alarm in alarms().values():
        for metric in cloudwatch_metrics(alarm):
            if metric["Namespace"] not in SAGEMAKER_METRICS:
                continue
            seen += 1
            assert metric["MetricName"] in SAGEMAKER_METRICS[metric["Namespace"]], metric
            assert {d["Name"] for d in metric["Dimensions"]} <= SAGEMAKER_DIMENSIONS, metric
    assert seen >= 6


def test_custom_alarm_metrics_are_made_by_a_metric_filter_of_the_template() -> None:
    """A classic metric outside SageMaker's namespaces is the output of a metric filter in the stack."""
    stack = monitoring()
    filters = stack.resources("AWS::Logs::MetricFilter").values()
    produced = {(t["MetricNamespace"], t["MetricName"]) for f in filters for t in f["MetricTransformations"]}
    custom = {(m["Namespace"], m["MetricName"]) for a in alarms().values() for m in cloudwatch_metrics(a)
              if m["Namespace"] not in SAGEMAKER_METRICS}
    assert custom
    assert custom <= produced


def test_metric_filter_matches_the_scorer_s_real_load_failure_line(
    scorer_with_broken_model: ScorerRun,
) -> None:
    """The model-load filter matches the line `serve` writes when its GGUF will not load.

    Exactly that line, and none of the other lines of the run (llama.cpp's own errors included).
    """
    (metric_filter,) = monitoring().resources("AWS::Logs::MetricFilter").values()
    pattern = metric_filter["FilterPattern"]
    matched = [line for line in scorer_with_broken_model.log_lines if filter_matches(pattern, line)]
    assert [line["message"] for line in matched] == ["model load failed"]
    assert len(scorer_with_broken_model.log_lines) > len(matched)


def test_promql_alarms_read_series_the_scorer_exposes(scorer_with_broken_model: ScorerRun) -> None:
    """Every series a PromQL alarm selects is on the real scorer's /metrics.

    Every label it matches is SageMaker's own or one the scorer sets, with a value the scorer produced
    (route="/invocations", status="503": a request while the model is not loaded).
    """
    samples = exposed_samples(scorer_with_broken_model.metrics_text)
    queries = [a["EvaluationCriteria"]["PromQLCriteria"]["Query"] for a in alarms().values()
               if "EvaluationCriteria" in a]
    assert len(queries) == 2
    for query in queries:
        series = promql_series(query)
        assert series, query
        for name, matchers in series:
            assert name in samples, f"{name} is not on the scorer's /metrics"
            own = {k: v for k, v in matchers.items() if k not in SAGEMAKER_OTEL_LABELS}
            assert any(own.items() <= labels.items() for labels in samples[name]), (name, own)
