"""SemIf v1 on the wire: the request schema, its validation, and the response shape.

`parse_request` is the one entry point: it takes decoded JSON and returns a `ScoreRequest`, or raises
`InvalidRequest` naming the offending field (``options[2].id``), so every edge answers the same 400.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from scorer.errors import InvalidRequest

MAX_OPTIONS = 256
MIN_OPTIONS = 2
MAX_DECISION_ID = 128

Normalization = Literal["none", "per_token", "per_char", "pmi"]


class Option(BaseModel):
    """One declared option: its id (echoed back) and the text that is scored."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    id: Annotated[str, Field(min_length=1, max_length=256)]
    text: Annotated[str, Field(min_length=1, max_length=4096)]


class Scoring(BaseModel):
    """How scores are normalized and what the response carries."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    normalization: Normalization = "none"
    return_prompt: bool = False


class ScoreRequest(BaseModel):
    """A SemIf v1 request. Unknown fields are rejected so a typo never silently changes a score."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    decision_id: Annotated[str, Field(min_length=1, max_length=MAX_DECISION_ID)]
    decision_type: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    state: str | dict[str, Any]
    question: Annotated[str, Field(min_length=1)]
    options: Annotated[list[Option], Field(min_length=MIN_OPTIONS, max_length=MAX_OPTIONS)]
    scoring: Scoring = Scoring()

    @field_validator("options", mode="before")
    @classmethod
    def _bare_strings(cls, value: Any) -> Any:
        """A bare string option means ``{"id": s, "text": s}``."""
        if isinstance(value, list):
            return [{"id": item, "text": item} if isinstance(item, str) else item for item in value]
        return value

    @field_validator("question")
    @classmethod
    def _question_has_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("question must contain non-whitespace text")
        return value

    @model_validator(mode="after")
    def _unique_ids(self) -> ScoreRequest:
        seen: set[str] = set()
        for index, option in enumerate(self.options):
            if option.id in seen:
                raise _FieldError(f"duplicate option id {option.id!r}", f"options[{index}].id")
            seen.add(option.id)
        return self

    def state_text(self) -> str:
        """The state as prompt text; an object is rendered with sorted keys (equal objects, equal prompts)."""
        if isinstance(self.state, str):
            return self.state
        return json.dumps(self.state, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


class _FieldError(ValueError):
    """A validation failure that knows its field path (raised inside model validators)."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def parse_request(payload: Any) -> ScoreRequest:
    """Validate decoded JSON as a SemIf request; raise `InvalidRequest` naming the first bad field."""
    if not isinstance(payload, dict):
        raise InvalidRequest("request body must be a JSON object", field=None)
    try:
        return ScoreRequest.model_validate(payload)
    except ValidationError as exc:
        raise _to_invalid_request(exc) from exc


def parse_request_bytes(body: bytes) -> ScoreRequest:
    """Decode a JSON body and validate it (bad JSON is a 400 like any schema violation)."""
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidRequest(f"body is not valid JSON: {exc}", field="body") from exc
    return parse_request(payload)


def _to_invalid_request(exc: ValidationError) -> InvalidRequest:
    error = exc.errors()[0]
    ctx_error = (error.get("ctx") or {}).get("error")
    if isinstance(ctx_error, _FieldError):
        return InvalidRequest(str(ctx_error), field=ctx_error.field)
    field = format_loc(error["loc"])
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        message = f"unknown field {field!r}"
    return InvalidRequest(f"{field}: {message}" if field else message, field=field or None)


def format_loc(loc: tuple[int | str, ...]) -> str:
    """Render a pydantic location as a field path: ``("options", 2, "id")`` -> ``options[2].id``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in {"str", "dict[str,any]"}:  # union branch names carry no meaning for the caller
            continue
        else:
            out += f".{part}" if out else str(part)
    return out
