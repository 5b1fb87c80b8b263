"""Records v1.1: the identity key separates every setting that changes a score; v1 columns stay first."""

from __future__ import annotations

import hashlib
import json

import pytest

from contracts.records import ADDED_IN_V1_1, OUTCOMES, PROPOSALS, RECORD_VERSION, model_identity

MODEL = {"name": "gemma-3-270m", "sha256": "a5fd" + "0" * 60, "quantization": "Q4_K_M", "device": "cpu",
         "runtime_version": "b6000", "n_threads": 2, "kv_type": "f32", "flash_attn": False,
         "segmentation": "static|suffix|options-batched", "image_digest": None}


def test_the_identity_is_canonical_json_and_its_sha256() -> None:
    """Key order does not matter; the text is sorted compact JSON and the key is its sha256."""
    text, sha = model_identity(MODEL, "default/1", "t" * 64, "pmi")
    shuffled, sha2 = model_identity(dict(reversed(list(MODEL.items()))), "default/1", "t" * 64, "pmi")
    assert text == shuffled
    assert sha == sha2 == hashlib.sha256(text.encode()).hexdigest()
    prompt = {"builder": "default/1", "template_sha256": "t" * 64}
    prompt = {"builder": "default/1", "template_sha256": "t" * 64}
    assert json.loads(text) == {"model": MODEL, "prompt": prompt, "normalization": "pmi"}


@pytest.mark.parametrize(("change", "value"), [("kv_type", "f16"), ("n_threads", 8), ("device", "cuda"),
                                               ("runtime_version", "b6001"), ("flash_attn", True),
                                               ("segmentation", "static|suffix|options")])
def test_an_identity_differing_in_one_model_setting_is_another_model(change: str, value: object) -> None:
    """Two runs of the same GGUF that differ only in ``kv_type`` (or any setting) get different keys."""
    _, base = model_identity(MODEL, "default/1", "t" * 64, "none")
    _, other = model_identity({**MODEL, change: value}, "default/1", "t" * 64, "none")
    assert base != other


def test_normalization_and_prompt_are_part_of_the_identity() -> None:
    """``pmi`` versus ``none``, or another template, on the same model are different keys."""
    keys = {model_identity(MODEL, builder, template, norm)[1]
            for builder, template, norm in [("default/1", "t", "none"), ("default/1", "t", "pmi"),
                                            ("default/2", "t", "none"), ("default/1", "u", "none")]}
    assert len(keys) == 4


def test_v1_1_only_adds_columns() -> None:
    """Every v1 column keeps its place and type; the added ones come after; this writer writes version 2."""
    for schema, added in ((PROPOSALS, ADDED_IN_V1_1["proposals"]), (OUTCOMES, ADDED_IN_V1_1["outcomes"])):
        names = schema.names
        assert set(names[-len(added):]) == added
        assert not added & set(names[:-len(added)])
    assert RECORD_VERSION == 2
