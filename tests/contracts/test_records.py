"""Records v1.2: the identity key separates every setting that changes a score; older columns stay first."""

from __future__ import annotations

import hashlib
import json

import pytest

from contracts.catalog import parse_catalog
from contracts.errors import CatalogError
from contracts.records import (
    ADDED_AFTER_V1,
    ADDED_IN_V1_1,
    ADDED_IN_V1_2,
    NONE_OF_THESE,
    OUTCOMES,
    PROPOSALS,
    RECORD_VERSION,
    model_identity,
)
from tests.shadow.harness import ticket_type

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


def test_each_version_only_adds_columns_after_the_older_ones() -> None:
    """v1 columns come first, then v1.1's, then v1.2's (audits); this writer writes version 3."""
    for name, schema in (("proposals", PROPOSALS), ("outcomes", OUTCOMES)):
        names = schema.names
        v1_2, v1_1 = ADDED_IN_V1_2[name], ADDED_IN_V1_1[name]
        tail = len(v1_1) + len(v1_2)
        assert set(names[len(names) - tail:len(names) - len(v1_2)]) == v1_1
        assert set(names[len(names) - len(v1_2):]) == v1_2
        assert not (v1_1 | v1_2) & set(names[:-tail])
        assert ADDED_AFTER_V1[name] == v1_1 | v1_2
    assert ADDED_IN_V1_2["outcomes"] == {"auditor", "audit_sample"}
    assert OUTCOMES.field("auditor").nullable
    assert OUTCOMES.field("audit_sample").nullable
    assert RECORD_VERSION == 3


def test_a_catalog_cannot_declare_the_none_of_these_answer_as_an_option() -> None:
    """An audit's "none of these" id is refused as an option id, so it never means an option."""
    dtype = ticket_type("http://127.0.0.1:1")
    parse_catalog({"version": 1, "decision_types": {"tickets": dtype}})
    dtype["options"] = [*dtype["options"], {"id": NONE_OF_THESE, "text": "none of these"}]
    with pytest.raises(CatalogError, match="reserved"):
        parse_catalog({"version": 1, "decision_types": {"tickets": dtype}})
