"""`semif-shadow score` and `semif-shadow model`: the scorer from the command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click


@click.command("score")
@click.option(
    "--request",
    "request_file",
    type=click.File("r"),
    default=None,
    help="SemIf request JSON file ('-' for stdin). Without it, build one from the flags below.",
)
@click.option("--question", default=None, help="The decision's question.")
@click.option(
    "--option",
    "options",
    multiple=True,
    metavar="ID=TEXT",
    help="An option, in order (repeat). 'billing' alone means id = text.",
)
@click.option("--state", default=None, help="The free-text state ('-' for stdin).")
@click.option("--decision-id", default="cli-1", show_default=True, help="Echoed back unchanged.")
@click.option("--decision-type", default=None, help="Catalog name (prefix cache key).")
@click.option(
    "--normalization",
    type=click.Choice(["none", "per_token", "per_char", "pmi"]),
    default="none",
    show_default=True,
    help="How option scores are normalized before the softmax.",
)
@click.option("--return-prompt", is_flag=True, help="Include the rendered prompt and option token ids.")
@click.option(
    "--model",
    "model_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="GGUF file (default: SCORER_MODEL_PATH, else the embedded Gemma 3 270M).",
)
def score(  # noqa: PLR0913, PLR0917  (one parameter per click option)
    request_file: Any,
    question: str | None,
    options: tuple[str, ...],
    state: str | None,
    decision_id: str,
    decision_type: str | None,
    normalization: str,
    return_prompt: bool,
    model_path: Path | None,
) -> None:
    """Score one decision and print the SemIf response.

    \b
    Examples:
      semif-shadow score --request decision.json
      echo '{"decision_id": "d1", ...}' | semif-shadow score --request -
      semif-shadow score --question "Which team should handle this ticket?" \
          --option billing="Billing" --option tech="Technical support" \
          --state "I was charged twice this month" --normalization pmi
    """
    from contracts.errors import WireError  # noqa: PLC0415
    from contracts.semif import parse_request  # noqa: PLC0415  (keep --help fast)
    from contracts.settings import build_settings  # noqa: PLC0415
    from scorer.engine import Engine  # noqa: PLC0415
    from scorer.errors import ScorerError  # noqa: PLC0415
    from scorer.settings import ScorerSettings  # noqa: PLC0415

    if request_file is not None:
        try:
            payload = json.load(request_file)
        except json.JSONDecodeError as exc:
            raise click.ClickException(f"--request is not valid JSON: {exc}") from exc
    else:
        if question is None or not options or state is None:
            raise click.UsageError("give --request FILE, or --question, --option (2+) and --state")
        payload = {
            "decision_id": decision_id,
            "question": question,
            "state": sys.stdin.read() if state == "-" else state,
            "options": [_parse_option(o) for o in options],
            "scoring": {"normalization": normalization, "return_prompt": return_prompt},
        }
        if decision_type:
            payload["decision_type"] = decision_type
    settings = build_settings(ScorerSettings, {"model_path": ("--model", model_path)})
    try:
        request = parse_request(payload)
        engine = Engine.from_settings(settings)
        try:
            response = engine.score(request)
        finally:
            engine.close()
    except WireError as exc:
        click.echo(json.dumps(exc.to_json(), indent=2), err=True)
        raise SystemExit(2) from exc
    except ScorerError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(json.dumps(response.to_json(), indent=2, ensure_ascii=False))


def _parse_option(spec: str) -> dict[str, str]:
    option_id, sep, text = spec.partition("=")
    return {"id": option_id, "text": text} if sep else {"id": spec, "text": spec}


@click.group("model")
def model() -> None:
    """Inspect the scorer's model and llama.cpp build.

    \b
    Examples:
      semif-shadow model info
      semif-shadow model system-info
    """


@model.command("info")
@click.option(
    "--model",
    "model_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="GGUF file (default: SCORER_MODEL_PATH, else the embedded default).",
)
def info(model_path: Path | None) -> None:
    """Load the model and print its pinned identity as JSON.

    \b
    Example:
      SCORER_N_THREADS=2 semif-shadow model info
    """
    from contracts.settings import build_settings  # noqa: PLC0415
    from scorer.engine import Engine  # noqa: PLC0415
    from scorer.settings import ScorerSettings  # noqa: PLC0415

    settings = build_settings(ScorerSettings, {"model_path": ("--model", model_path)})
    engine = Engine.from_settings(settings)
    try:
        click.echo(json.dumps(engine.identity.to_json(), indent=2))
    finally:
        engine.close()


@model.command("system-info")
def system_info() -> None:
    """Print the CPU/GPU features llama.cpp was built with (llama_print_system_info).

    \b
    Example:
      semif-shadow model system-info
    """
    from scorer import runtime  # noqa: PLC0415

    click.echo(f"{runtime.ggml_commit()} | {runtime.system_info()}")


@click.command("release-record")
@click.argument("model_path", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--image-digest", required=True, help="The scorer image's digest (sha256:...), as deployed.")
@click.option("--normalization", type=click.Choice(["none", "per_token", "per_char", "pmi"]),
              default="pmi", show_default=True, help="The normalization the catalog asks this release for.")
@click.option("--source-revision", default=None,
              help="Where the weights came from (repo@revision); default: GGUF general.source.* metadata.")
@click.option("--instance-type", "instance_types", multiple=True,
              help="The instance type it will run on (SCORER_INSTANCE_TYPE); repeat for instance pools.")
def release_record(model_path: Path, image_digest: str, normalization: str, source_revision: str | None,
                   instance_types: tuple[str, ...]) -> None:
    """Load MODEL_PATH with the scorer's settings and print its release record (JSON) on stdout.

    Every SCORER_* setting that changes a score (threads, offload, context, KV type, flash attention)
    is taken as the deployed scorer will have it: run this with the endpoint's settings, on the device
    type it will run on. `serve` with SCORER_RELEASE_RECORD=release.json refuses to start otherwise.

    \b
    Example:
      SCORER_N_THREADS=16 semif-shadow release-record model.gguf \\
          --image-digest sha256:0123... --instance-type ml.g6e.xlarge --instance-type ml.g5.2xlarge \\
          > release.json
    """
    from contracts.settings import build_settings  # noqa: PLC0415
    from scorer import release  # noqa: PLC0415
    from scorer.engine import Engine  # noqa: PLC0415
    from scorer.settings import ScorerSettings  # noqa: PLC0415

    settings = build_settings(ScorerSettings, {
        "model_path": ("MODEL_PATH", model_path), "image_digest": ("--image-digest", image_digest),
    })
    engine = Engine.from_settings(settings)
    try:
        record = release.build(engine, normalization=normalization, source_revision=source_revision,
                               instance_types=instance_types)
    finally:
        engine.close()
    click.echo(json.dumps(record, indent=2, sort_keys=True))
