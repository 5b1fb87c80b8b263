"""Every invalid request in the SemIf error table is a 400 naming its field, never a crash."""

from __future__ import annotations

import json
from typing import Any

import pytest

from contracts.errors import InvalidRequest
from contracts.semif import parse_request, parse_request_bytes, parse_response


def _valid() -> dict[str, Any]:
    return {"decision_id": "d-1", "state": "s", "question": "q?", "options": ["a", "b"]}


def _with(**changes: Any) -> dict[str, Any]:
    body = _valid()
    for key, value in changes.items():
        if value is _DROP:
            body.pop(key)
        else:
            body[key] = value
    return body


_DROP = object()

INVALID = [
    ("missing decision_id", _with(decision_id=_DROP), "decision_id"),
    ("empty decision_id", _with(decision_id=""), "decision_id"),
    ("long decision_id", _with(decision_id="x" * 129), "decision_id"),
    ("numeric decision_id", _with(decision_id=7), "decision_id"),
    ("missing state", _with(state=_DROP), "state"),
    ("list state", _with(state=["a"]), "state"),
    ("missing question", _with(question=_DROP), "question"),
    ("blank question", _with(question="   "), "question"),
    ("missing options", _with(options=_DROP), "options"),
    ("one option", _with(options=["a"]), "options"),
    ("empty options", _with(options=[]), "options"),
    ("257 options", _with(options=[f"o{i}" for i in range(257)]), "options"),
    (
        "duplicate ids",
        _with(options=["a", {"id": "b", "text": "B"}, {"id": "a", "text": "A2"}]),
        "options[2].id",
    ),
    ("empty id", _with(options=["a", {"id": "", "text": "B"}]), "options[1].id"),
    ("empty text", _with(options=["a", {"id": "b", "text": ""}]), "options[1].text"),
    ("option not object", _with(options=["a", 3]), "options[1]"),
    ("option extra field", _with(options=["a", {"id": "b", "text": "B", "x": 1}]), "options[1].x"),
    ("unknown top-level field", _with(temperature=0.2), "temperature"),
    ("bad normalization", _with(scoring={"normalization": "softmax"}), "scoring.normalization"),
    ("unknown scoring field", _with(scoring={"normalise": "pmi"}), "scoring.normalise"),
    ("return_prompt not bool", _with(scoring={"return_prompt": "yes"}), "scoring.return_prompt"),
]


@pytest.mark.parametrize(("case", "body", "field"), INVALID, ids=[c[0] for c in INVALID])
def test_invalid_requests_name_their_field(case: str, body: dict[str, Any], field: str) -> None:
    """Each schema violation raises InvalidRequest (400, invalid_request) with the offending field."""
    with pytest.raises(InvalidRequest) as info:
        parse_request(body)
    error = info.value.to_json()["error"]
    assert info.value.status == 400, case
    assert error["code"] == "invalid_request"
    assert error["field"] == field
    assert error["message"]


@pytest.mark.parametrize("raw", [b"{not json", b"\xff\xfe", b"", b"[1, 2]", b'"text"'])
def test_bad_json_bodies_are_400(raw: bytes) -> None:
    """Undecodable or non-object bodies are a 400, not an exception escaping the parser."""
    with pytest.raises(InvalidRequest) as info:
        parse_request_bytes(raw)
    assert info.value.status == 400


def test_valid_request_normalizes_bare_strings_and_keeps_order() -> None:
    """Bare-string options mean id = text; order and defaults are kept."""
    request = parse_request(_with(options=["b", {"id": "a", "text": "Alpha"}, "c"], decision_type="t"))
    assert [(o.id, o.text) for o in request.options] == [("b", "b"), ("a", "Alpha"), ("c", "c")]
    assert request.scoring.normalization == "none"
    assert request.scoring.return_prompt is False


def test_256_options_are_accepted() -> None:
    """The upper bound is inclusive."""
    assert len(parse_request(_with(options=[f"o{i}" for i in range(256)])).options) == 256


def test_object_state_renders_sorted_and_stable() -> None:
    """An object state renders with sorted keys, non-ASCII kept as is."""
    request = parse_request(_with(state={"z": 1, "a": {"y": "é", "b": None}}))
    assert request.state_text() == json.dumps({"a": {"b": None, "y": "é"}, "z": 1}, ensure_ascii=False)


@pytest.mark.parametrize("body", [b'{"a":' * 5000 + b"1" + b"}" * 5000, b"[" * 100_000],
                         ids=["5000 nested objects", "100000 brackets"])
def test_json_nested_past_the_recursion_limit_is_a_400_naming_the_body(body: bytes) -> None:
    """Nesting deeper than Python's recursion limit is `invalid_request` on ``body``, not a crash."""
    with pytest.raises(InvalidRequest) as info:
        parse_request_bytes(body)
    assert info.value.field == "body"
    assert info.value.status == 400


def _response_body() -> dict[str, Any]:
    return {"decision_id": "d-1",
            "options": [{"id": "b", "probability": 0.25, "logit": -2.0, "tokens": 1},
                        {"id": "a", "probability": 0.75, "logit": -1.0, "tokens": 2}],
            "prompt": {"builder": "default/1", "prompt_tokens": 12, "cached_tokens": 4},
            "model": {"name": "m", "sha256": "f" * 64, "kv_type": "f32", "vendor_field": 7}}


def test_a_response_keeps_what_it_was_sent_and_always_says_its_version() -> None:
    """Parsing keeps unknown model fields (evidence of identity); the JSON form always has semif_version."""
    response = parse_response(_response_body())
    body = response.to_json()
    assert body["semif_version"] == "1"
    assert body["model"]["vendor_field"] == 7
    assert "token_ids" not in body["options"][0]
    assert "text" not in body["prompt"]
    assert [o.id for o in response.in_order(["a", "b"])] == ["a", "b"]


@pytest.mark.parametrize("declared", [["a"], ["a", "b", "c"], ["a", "x"]])
def test_a_response_for_other_options_is_refused(declared: list[str]) -> None:
    """Options that are not exactly the declared ones are a ValueError (the sidecar's invalid_response)."""
    with pytest.raises(ValueError, match="differ"):
        parse_response(_response_body()).in_order(declared)


@pytest.mark.parametrize("body", [[], "x", {"options": []}, {"decision_id": "d", "options": [{"id": "a"}]}])
def test_what_is_not_a_response_is_a_value_error(body: Any) -> None:
    """A body that is not a SemIf response raises ValueError (pydantic's ValidationError is one)."""
    with pytest.raises(ValueError):
        parse_response(body)
