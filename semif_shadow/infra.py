"""`semif-shadow infra render`: a CloudFormation template's parameter file, filled, never hand-edited.

Values come, lowest precedence first, from the template's defaults, a base parameter file, the
outputs of stacks already deployed (each template's ``Metadata.RenderedFrom`` says which output feeds
which parameter), the release record (GGUF sha256, the record's own sha256, threads, offload,
context, KV type, flash attention, instance pools, the image digest), the catalog (decision types),
and ``--set KEY=VALUE``. A ``--set`` that contradicts the release record is refused; every value is
checked against the template's own constraints, and every parameter without a default must be filled.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import click
import yaml

from contracts.errors import SettingsError
from pipelines.errors import BadArgument
from pipelines.weeks import parse_week, week_label

TEMPLATES = Path(__file__).resolve().parents[1] / "infra" / "cloudformation"
OUTPUT_RULE = re.compile(r"(\S+\.yaml) output (\w+)")
POOLS = ("PoolType1", "PoolType2", "PoolType3", "PoolType4")


class _CfnLoader(yaml.SafeLoader):
    """YAML with CloudFormation's short tags (``!Ref``, ``!Sub``...) read as plain values."""


def _any_tag(loader: yaml.SafeLoader, _suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_mapping(node)  # type: ignore[arg-type]


_CfnLoader.add_multi_constructor("!", _any_tag)


def load_template(name_or_path: str) -> tuple[Path, dict[str, Any]]:
    """A template by path, or by name under ``infra/cloudformation``."""
    path = Path(name_or_path)
    if not path.exists():
        path = TEMPLATES / f"{name_or_path.removesuffix('.yaml')}.yaml"
    try:
        return path, yaml.load(path.read_text(encoding="utf-8"), Loader=_CfnLoader)  # noqa: S506
    except OSError as exc:
        known = ", ".join(sorted(p.stem for p in TEMPLATES.glob("*.yaml")))
        raise SettingsError(f"--template: no template {name_or_path!r} (known: {known})") from exc


def release_values(record_path: Path, images: dict[str, Any] | None, repository: str | None,
                   model_bucket: str | None) -> dict[str, str]:
    """What the release record pins, as template parameters."""
    raw = record_path.read_bytes()
    record = json.loads(raw)
    model = record["model"]
    digest = model.get("image_digest")
    values = {
        "ModelSha256": model["sha256"],
        "ReleaseRecordSha256": hashlib.sha256(raw).hexdigest(),
        "NGpuLayers": str(model["n_gpu_layers"]),
        "NThreads": str(model["n_threads"]),
        "NCtx": str(model["n_ctx"]),
        "KvType": model["kv_type"],
        "FlashAttn": str(bool(model["flash_attn"])).lower(),
    }
    pools = record.get("instance_types") or ([model["instance_type"]] if model.get("instance_type") else [])
    if len(pools) > len(POOLS):
        raise SettingsError(f"--release: {len(pools)} instance types; the endpoint takes 4 at most")
    if pools:
        values.update(dict(zip(POOLS, [*pools, *[""] * (len(POOLS) - len(pools))], strict=True)))
    if images is not None:
        uris = [i["image_uri"] for i in images.get("images", {}).values() if i.get("digest") == digest]
        if not uris:
            raise SettingsError(f"--images: no image with the release record's digest {digest}")
        values["ImageUri"] = uris[0]
    elif repository is not None:
        values["ImageUri"] = f"{repository}@{digest}"
    if model_bucket is not None:
        values["ModelDataUrl"] = f"s3://{model_bucket}/models/{model['sha256']}/"
    return values


def output_values(template: dict[str, Any], outputs: dict[str, str]) -> dict[str, str]:
    """Parameters fed by deployed stacks' outputs, as ``RenderedFrom`` names them."""
    values = {}
    for param, rule in (template.get("Metadata", {}).get("RenderedFrom") or {}).items():
        match = OUTPUT_RULE.search(str(rule))
        if match and match.group(2) in outputs:
            values[param] = outputs[match.group(2)]
    return values


def read_outputs(paths: tuple[Path, ...]) -> dict[str, str]:
    """Stack outputs from `aws cloudformation describe-stacks` JSON (or a plain name -> value map)."""
    outputs: dict[str, str] = {}
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "Stacks" in data:
            for stack in data["Stacks"]:
                outputs.update({o["OutputKey"]: str(o["OutputValue"]) for o in stack.get("Outputs", [])})
        elif isinstance(data, dict):
            outputs.update({str(k): str(v) for k, v in data.items()})
    return outputs


def iso_weeks(first: str, last: str) -> str:
    """``YYYY-Www`` labels from ``first`` to ``last`` inclusive, comma-separated (``pipelines.weeks``)."""
    try:
        start, end = parse_week(first, "--weeks"), parse_week(last, "--weeks")
    except BadArgument as exc:
        raise SettingsError(f"--weeks: {first}:{last} is not two ISO weeks (2026-W01:2028-W52)") from exc
    count = (end - start).days // 7 + 1
    return ",".join(week_label(start + dt.timedelta(weeks=k)) for k in range(count))


def check(template: dict[str, Any], values: dict[str, str]) -> list[dict[str, str]]:
    """Every value against its parameter's constraints; the parameter file, in template order."""
    params = template.get("Parameters", {})
    unknown = sorted(set(values) - set(params))
    if unknown:
        raise SettingsError(f"--set: the template has no parameter {', '.join(unknown)}")
    missing = [p for p, spec in params.items() if p not in values and "Default" not in spec]
    if missing:
        raise SettingsError(f"parameters without a value or default: {', '.join(missing)} "
                            "(give them with --set, --stack-outputs or --release)")
    for name, value in values.items():
        spec = params[name]
        pattern = spec.get("AllowedPattern")
        if pattern is not None and not re.fullmatch(pattern, value):
            hint = spec.get("ConstraintDescription", "")
            raise SettingsError(f"{name}: {value!r} does not match {pattern} {hint}".rstrip())
        allowed = spec.get("AllowedValues")
        if allowed is not None and value not in [str(a) for a in allowed]:
            raise SettingsError(f"{name}: {value!r} is not one of {allowed}")
        if spec.get("Type") == "Number":
            _check_number(name, value, spec)
    return [{"ParameterKey": p, "ParameterValue": values[p]} for p in params if p in values]


def _check_number(name: str, value: str, spec: dict[str, Any]) -> None:
    try:
        number = float(value)
    except ValueError as exc:
        raise SettingsError(f"{name}: {value!r} is not a number") from exc
    if ("MinValue" in spec and number < float(spec["MinValue"])) or (
            "MaxValue" in spec and number > float(spec["MaxValue"])):
        raise SettingsError(f"{name}: {value} is outside [{spec.get('MinValue')}, {spec.get('MaxValue')}]")


def render(  # noqa: PLR0913  (one source per argument)
    template: dict[str, Any], *, base: dict[str, str], outputs: dict[str, str], released: dict[str, str],
    catalog_types: list[str] | None, overrides: dict[str, str],
) -> list[dict[str, str]]:
    """Merge the sources in precedence order and check the result against the template."""
    params = template.get("Parameters", {})
    values = {**base, **{k: v for k, v in output_values(template, outputs).items() if k in params}}
    if released and POOLS[0] in params and POOLS[0] not in released:
        raise SettingsError("--release: the record names no instance type, and every pool's scorer reports "
                            "its own (SCORER_INSTANCE_TYPE); write it with --instance-type for each pool")
    values.update({k: v for k, v in released.items() if k in params})
    if catalog_types is not None and "DecisionTypes" in params:
        values["DecisionTypes"] = ",".join(catalog_types)
    clashes = [f"{k}={overrides[k]} (the release record pins {released[k]})"
               for k in overrides if k in released and k in params and overrides[k] != released[k]]
    if clashes:
        raise SettingsError(f"--set contradicts the release record: {'; '.join(clashes)}")
    return check(template, {**values, **overrides})


def _pairs(specs: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for spec in specs:
        key, sep, value = spec.partition("=")
        if not sep or not key:
            raise SettingsError(f"--set: {spec!r} is not KEY=VALUE")
        out[key] = value
    return out


@click.group("infra")
def infra() -> None:
    """Deployment files: fill CloudFormation parameters from settings and the release record.

    \b
    Example:
      semif-shadow infra render --template scorer-endpoint --release release.json \\
          --images images.json --model-bucket my-models --stack-outputs iam-outputs.json \\
          --set EndpointName=semif-scorer > scorer-params.json
    """


@infra.command("render")
@click.option("--template", "template_name", required=True,
              help="A template name under infra/cloudformation (scorer-endpoint, athena...) or a path.")
@click.option("--release", "release_path", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              default=None, help="release.json from `semif-shadow release-record`.")
@click.option("--images", "images_path", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              default=None, help="images.json from the image build (buildspec): the image by digest.")
@click.option("--image-repository", default=None, help="ECR repository URI, when there is no images.json.")
@click.option("--model-bucket", default=None, help="Bucket of the GGUF and release.json (models/<sha256>/).")
@click.option("--stack-outputs", type=click.Path(path_type=Path, dir_okay=False, exists=True), multiple=True,
              help="`aws cloudformation describe-stacks` JSON of a deployed stack (repeat).")
@click.option("--base", "base_path", type=click.Path(path_type=Path, dir_okay=False, exists=True),
              default=None, help="A parameter file to start from (e.g. infra/cloudformation/params/*.json).")
@click.option("--catalog", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None,
              help="The sidecar's catalog: its decision types (DecisionTypes).")
@click.option("--weeks", default=None, metavar="FIRST:LAST",
              help="ISO weeks for MartWeeks, e.g. 2026-W40:2028-W52.")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Any parameter (repeat).")
def render_command(  # noqa: PLR0913, PLR0917  (click passes one argument per option)
    template_name: str, release_path: Path | None, images_path: Path | None, image_repository: str | None,
    model_bucket: str | None, stack_outputs: tuple[Path, ...], base_path: Path | None, catalog: Path | None,
    weeks: str | None, sets: tuple[str, ...],
) -> None:
    """Print a CloudFormation parameter file (JSON) for one template, every value checked.

    \b
    Examples:
      semif-shadow infra render --template scorer-endpoint --base params/scorer-cpu.json \\
          --release release.json --images images.json --model-bucket my-models \\
          --stack-outputs iam-outputs.json > scorer-params.json
      semif-shadow infra render --template athena --catalog catalog.yaml --weeks 2026-W01:2028-W52 \\
          --set RecordsBucketName=my-records > athena-params.json
    """
    _, template = load_template(template_name)
    base = {}
    if base_path is not None:
        base = {p["ParameterKey"]: p["ParameterValue"] for p in json.loads(base_path.read_text())}
    images = json.loads(images_path.read_text()) if images_path else None
    released = release_values(release_path, images, image_repository, model_bucket) if release_path else {}
    catalog_types = None
    if catalog is not None:
        from contracts.catalog import load_catalog  # noqa: PLC0415

        catalog_types = sorted(load_catalog(catalog).decision_types)
    overrides = _pairs(sets)
    if weeks is not None:
        first, _, last = weeks.partition(":")
        overrides.setdefault("MartWeeks", iso_weeks(first, last or first))
    params = render(template, base=base, outputs=read_outputs(stack_outputs), released=released,
                    catalog_types=catalog_types, overrides=overrides)
    click.echo(json.dumps(params, indent=2))
