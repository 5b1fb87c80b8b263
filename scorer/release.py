"""The release record: what a deployed scorer must be, written once and enforced at start.

``semif-shadow release-record MODEL.gguf --image-digest sha256:...`` loads the model with the scorer's
settings and writes a JSON record of everything that changes a score: the running model identity (GGUF
sha256, quantization, llama.cpp revision, image digest, device, threads, offload, context, KV and
attention settings, segmentation), the tokenizer's hash, the model's source revision, the prompt builder
and template, the normalization, and the scoring code version. ``model_identity_sha256`` is computed by
the same function that keys the records' rows (``contracts.records.model_identity``), so a record names
exactly the identity its endpoint's rows will carry.

A scorer started with ``SCORER_RELEASE_RECORD=release.json`` (and optionally
``SCORER_RELEASE_RECORD_SHA256``, the file's own hash) loads the model, compares, and refuses to start
with every differing field named; it never serves under an identity the release did not pin.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from importlib.metadata import version
from typing import TYPE_CHECKING, Any

from contracts.errors import SettingsError
from contracts.records import model_identity
from scorer import prompt

if TYPE_CHECKING:
    from pathlib import Path

    from scorer.engine import Engine
    from scorer.runtime import LlamaRuntime

FORMAT = "semif.release/v1"
SOURCE_KEYS = ("general.source.huggingface.repository", "general.source.url", "general.url")
"""GGUF metadata keys that say where the weights came from, first found wins."""
PINNED = ("tokenizer_sha256", "prompt", "scoring_code_version")
"""Top-level fields compared besides ``model`` (``normalization`` is checked by the sidecar's catalog)."""


def tokenizer_sha256(rt: LlamaRuntime) -> str:
    """sha256 over the tokenizer: its model type and every token's bytes, length-prefixed, in id order."""
    digest = hashlib.sha256(f"{rt.meta('tokenizer.ggml.model')}|{rt.n_vocab}|".encode())
    for token in range(rt.n_vocab):
        piece = rt.piece(token, special=True)
        digest.update(len(piece).to_bytes(4, "little"))
        digest.update(piece)
    return digest.hexdigest()


def build(engine: Engine, *, normalization: str, source_revision: str | None = None,
          instance_types: tuple[str, ...] = ()) -> dict[str, Any]:
    """The release record of the loaded ``engine`` (its identity carries the image digest given to it).

    One instance type is pinned in ``model``; several (an endpoint's instance pools) leave
    ``model.instance_type`` open, list them in ``instance_types``, and give the identity each pool's
    rows will carry in ``model_identity_sha256_by_instance_type``.
    """
    model = engine.identity.to_json()
    if instance_types:
        model["instance_type"] = instance_types[0] if len(instance_types) == 1 else None
    source = source_revision or next(
        (value for key in SOURCE_KEYS if (value := engine.rt.meta(key))), None
    )
    text, sha = model_identity(model, prompt.BUILDER_NAME, prompt.TEMPLATE_SHA256, normalization)
    pools = {}
    if len(instance_types) > 1:
        pools = {"instance_types": list(instance_types), "model_identity_sha256_by_instance_type": {
            t: model_identity({**model, "instance_type": t}, prompt.BUILDER_NAME, prompt.TEMPLATE_SHA256,
                              normalization)[1] for t in instance_types}}
    return {
        "format": FORMAT,
        "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "model": model,
        "tokenizer_sha256": tokenizer_sha256(engine.rt),
        "source_revision": source,
        "prompt": {"builder": prompt.BUILDER_NAME, "template_sha256": prompt.TEMPLATE_SHA256},
        "normalization": normalization,
        "scoring_code_version": version("semif-shadow"),
        "model_identity": text,
        "model_identity_sha256": sha,
        **pools,
    }


def load(path: Path, expected_sha256: str | None = None) -> dict[str, Any]:
    """Read and check a record file; raise ``SettingsError`` naming ``SCORER_RELEASE_RECORD`` if unusable."""
    name = "SCORER_RELEASE_RECORD"
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SettingsError(f"{name}: cannot read {path}: {exc.strerror or exc}") from exc
    if expected_sha256 is not None and hashlib.sha256(raw).hexdigest() != expected_sha256.lower():
        raise SettingsError(
            f"SCORER_RELEASE_RECORD_SHA256: {path} has sha256 {hashlib.sha256(raw).hexdigest()}, "
            f"not {expected_sha256}"
        )
    try:
        record = json.loads(raw)
    except ValueError as exc:
        raise SettingsError(f"{name}: {path} is not JSON: {exc}") from exc
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise SettingsError(f"{name}: {path} is not a {FORMAT} record (format field)")
    missing = [k for k in ("model", *PINNED, "normalization", "model_identity_sha256") if k not in record]
    if missing or not isinstance(record["model"], dict):
        raise SettingsError(f"{name}: {path} lacks {', '.join(missing) or 'a model object'}")
    prompt_info = record["prompt"] if isinstance(record["prompt"], dict) else {}
    _, sha = model_identity(record["model"], prompt_info.get("builder"), prompt_info.get("template_sha256"),
                            record["normalization"])
    if sha != record["model_identity_sha256"]:
        raise SettingsError(f"{name}: {path}: model_identity_sha256 does not match its own fields "
                            "(edited by hand?); write it again with `semif-shadow release-record`")
    return record


def mismatches(record: dict[str, Any], running: dict[str, Any]) -> list[str]:
    """``field: record X, running Y`` for every pinned field where the running scorer differs."""
    pools = record.get("instance_types")
    out = [
        f"model.{key}: record {record['model'].get(key)!r}, running {running['model'].get(key)!r}"
        for key in sorted(set(record["model"]) | set(running["model"]))
        if record["model"].get(key) != running["model"].get(key) and not (key == "instance_type" and pools)
    ]
    if pools and running["model"].get("instance_type") not in pools:
        placed = running["model"].get("instance_type")
        out.append(f"model.instance_type: record one of {pools!r}, running {placed!r}")
    out += [
        f"{key}: record {record[key]!r}, running {running[key]!r}"
        for key in PINNED
        if record[key] != running[key]
    ]
    return out


def enforce(record: dict[str, Any], engine: Engine, path: Path) -> None:
    """Raise ``SettingsError`` naming every field where ``engine`` is not what ``record`` pinned."""
    problems = mismatches(record, build(engine, normalization=record["normalization"]))
    if problems:
        raise SettingsError(
            f"SCORER_RELEASE_RECORD: the running scorer is not the release in {path} "
            f"({len(problems)} field(s) differ): " + "; ".join(problems)
        )
