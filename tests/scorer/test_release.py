"""The release record: written from the real model, enforced by a real `serve` process.

A scorer whose identity differs from the record in any pinned field exits 2 before it binds its port,
naming the field; one of the same identity starts and its responses carry the record's identity, as
the sidecar computes it for every row (`contracts.records.model_identity`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from contracts.records import model_identity
from tests.harness import free_port
from tests.scorer.harness import PROCESS_DECISION as DECISION
from tests.scorer.harness import ping_status

ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).with_name("semif-shadow"))
DIGEST = "sha256:" + "ab" * 32
SETTINGS = {"SCORER_N_CTX": "1024", "SCORER_N_THREADS": "2"}


def _env(model_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCORER_")}
    return {**env, "SCORER_MODEL_PATH": str(model_path), **SETTINGS, **extra}


@pytest.fixture(scope="module")
def record_file(model_path: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`semif-shadow release-record` of the embedded model, as the deployed scorer will run it."""
    done = subprocess.run(  # noqa: S603  (our own console script, fixed arguments)
        [CLI, "release-record", str(model_path), "--image-digest", DIGEST, "--normalization", "pmi"],
        env=_env(model_path), capture_output=True, check=True, cwd=ROOT,
    )
    path = tmp_path_factory.mktemp("release") / "release.json"
    path.write_bytes(done.stdout)
    return path


def test_the_record_pins_the_file_the_settings_and_the_code(record_file: Path, model_path: Path) -> None:
    """The GGUF's own sha256, the image digest and the settings given, the prompt and code version."""
    record = json.loads(record_file.read_text())
    assert record["format"] == "semif.release/v1"
    assert record["model"]["sha256"] == hashlib.sha256(model_path.read_bytes()).hexdigest()
    assert record["model"]["image_digest"] == DIGEST
    assert (record["model"]["n_threads"], record["model"]["n_ctx"]) == (2, 1024)
    assert record["model"]["quantization"] == "Q4_K_M"
    assert record["normalization"] == "pmi"
    assert record["prompt"]["builder"] == "default/1"
    assert len(record["tokenizer_sha256"]) == 64
    assert record["tokenizer_sha256"] != record["model"]["sha256"]


def _serve(model_path: Path, record: Path, port: int, **extra: str) -> subprocess.Popen[bytes]:
    env = _env(model_path, **{"SCORER_IMAGE_DIGEST": DIGEST, "SCORER_RELEASE_RECORD": str(record), **extra})
    return subprocess.Popen(  # noqa: S603  (our own console script, fixed arguments)
        [CLI, "serve", "--port", str(port)], env=env, cwd=ROOT,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )


def _refusal(model_path: Path, record: Path, **extra: str) -> str:
    """Start `serve` against ``record``; it must exit 2 without ever listening; its stderr."""
    port = free_port()
    proc = _serve(model_path, record, port, **extra)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err.decode()
    with pytest.raises(ConnectionRefusedError):
        asyncio.run(asyncio.open_connection("127.0.0.1", port))
    return err.decode()


@pytest.mark.parametrize(
    ("setting", "value", "field"),
    [("SCORER_IMAGE_DIGEST", "sha256:" + "cd" * 32, "model.image_digest"),
     ("SCORER_N_THREADS", "1", "model.n_threads"),
     ("SCORER_KV_TYPE", "f16", "model.kv_type"),
     ("SCORER_BATCH_OPTIONS", "false", "model.segmentation")],
)
def test_a_scorer_of_another_identity_refuses_to_start(
    record_file: Path, model_path: Path, setting: str, value: str, field: str
) -> None:
    """One pinned setting off: exit 2 before binding the port, the field and both values named."""
    err = _refusal(model_path, record_file, **{setting: value})
    assert f"{field}: record" in err
    assert "1 field(s) differ" in err


def test_an_edited_record_or_a_wrong_file_hash_is_refused(record_file: Path, model_path: Path,
                                                          tmp_path: Path) -> None:
    """A record edited by hand no longer matches its own identity hash; a pinned file hash is checked."""
    record = json.loads(record_file.read_text())
    record["model"]["n_threads"] = 1
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(record))
    assert "does not match its own fields" in _refusal(model_path, edited, SCORER_N_THREADS="1")
    assert "SCORER_RELEASE_RECORD_SHA256" in _refusal(
        model_path, record_file, SCORER_RELEASE_RECORD_SHA256="0" * 64)


async def _score_when_ready(url: str) -> dict[str, Any]:
    async with aiohttp.ClientSession() as session:
        for _ in range(6000):
            if await ping_status(session, url) == 200:
                break
            await asyncio.sleep(0.02)
        body = {**DECISION, "scoring": {"normalization": "pmi"}}
        async with session.post(f"{url}/invocations", json=body) as resp:
            assert resp.status == 200
            answer: dict[str, Any] = await resp.json()
            return answer


def test_the_same_identity_starts_and_its_rows_carry_the_record_identity(
    record_file: Path, model_path: Path
) -> None:
    """Matching settings: it serves, and the identity a row would carry is the record's identity sha."""
    record = json.loads(record_file.read_text())
    port = free_port()
    proc = _serve(model_path, record_file, port,
                  SCORER_RELEASE_RECORD_SHA256=hashlib.sha256(record_file.read_bytes()).hexdigest())
    try:
        body = asyncio.run(_score_when_ready(f"http://127.0.0.1:{port}"))
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    _, sha = model_identity(body["model"], body["prompt"]["builder"], body["prompt"]["template_sha256"],
                            "pmi")
    assert sha == record["model_identity_sha256"]
    assert body["model"] == record["model"]


def test_instance_pools_leave_the_type_open_to_the_listed_ones(record_file: Path) -> None:
    """A record for several pool types accepts any listed type and names the one it does not list."""
    from scorer.release import mismatches  # noqa: PLC0415

    record = json.loads(record_file.read_text())
    pooled = {**record, "model": {**record["model"], "instance_type": None},
              "instance_types": ["ml.g6e.xlarge", "ml.g5.2xlarge"]}
    running = {**record, "model": {**record["model"], "instance_type": "ml.g5.2xlarge"}}
    assert mismatches(pooled, running) == []
    running["model"]["instance_type"] = "ml.g4dn.xlarge"
    assert mismatches(pooled, running) == [
        "model.instance_type: record one of ['ml.g6e.xlarge', 'ml.g5.2xlarge'], running 'ml.g4dn.xlarge'"]
    assert mismatches(record, running) == ["model.instance_type: record None, running 'ml.g4dn.xlarge'"]
