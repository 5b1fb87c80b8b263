"""SemIf v1 on the wire: the request schema and its validation, and the response models.

`parse_request` is the one entry point for requests: it takes decoded JSON and returns a `ScoreRequest`,
or raises `InvalidRequest` naming the offending field (``options[2].id``), so every edge answers the same
400. The scorer builds a `ScoreResponse`; every backend of the sidecar parses one with
`parse_response`. The document is ``docs/semif.md``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from contracts.errors import InvalidRequest

SEMIF_VERSION = "1"
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
    return parse_request(decode_json(body))


def decode_json(body: bytes) -> Any:
    """Decode a JSON body; bad JSON, bad UTF-8 and nesting deeper than Python can follow are one 400."""
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidRequest(f"body is not valid JSON: {exc}", field="body") from exc
    except RecursionError as exc:
        raise InvalidRequest("body is nested too deeply", field="body") from exc


def _to_invalid_request(exc: ValidationError) -> InvalidRequest:
    error = exc.errors()[0]
    ctx_error = (error.get("ctx") or {}).get("error")
    if isinstance(ctx_error, _FieldError):
        return InvalidRequest(str(ctx_error), field=ctx_error.field)
    field = format_loc(error["loc"])
    message = error["msg"]
    if error["type"] == "extra_forbidden":
        message = f"unknown field {field!r}"
    return InvalidRequest(f"{field}: {message}" if field else message, field=field or "body")


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


# -- the response ---------------------------------------------------------------------------------


class _Open(BaseModel):
    """A response part: known fields typed, unknown ones kept (another server's extras are evidence)."""

    model_config = ConfigDict(extra="allow", frozen=True)


class OptionScore(_Open):
    """One option's score, in request order."""

    id: str
    probability: float
    logit: float
    tokens: int | None = None
    token_ids: list[int] | None = None


class PromptInfo(_Open):
    """What was scored: the prompt builder and template, token counts, segments, truncation."""

    builder: str | None = None
    template_sha256: str | None = None
    prompt_tokens: int = 0
    cached_tokens: int | None = None
    segments: list[int] | None = None
    truncated: bool = False
    state_tokens_dropped: int = 0
    text: str | None = None


class ModelInfo(_Open):
    """The pinned model identity: everything that changes a score (a change is a different model)."""

    name: str | None = None
    file: str | None = None
    sha256: str | None = None
    quantization: str | None = None
    architecture: str | None = None
    runtime: str | None = None
    runtime_version: str | None = None
    bindings_version: str | None = None
    device: str | None = None
    n_gpu_layers: int | None = None
    n_threads: int | None = None
    n_ctx: int | None = None
    n_batch: int | None = None
    flash_attn: bool | None = None
    kv_type: str | None = None
    segmentation: str | None = None
    batch_invariant: bool | None = None
    op_offload: bool | None = None
    image_digest: str | None = None
    instance_type: str | None = None


class ScoreResponse(_Open):
    """A SemIf v1 response (200)."""

    semif_version: str = SEMIF_VERSION
    decision_id: str
    options: list[OptionScore]
    prompt: PromptInfo = PromptInfo()
    model: ModelInfo = ModelInfo()
    timing_ms: dict[str, float] = Field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The response body as sent: fields never set (``token_ids``, ``text``) are left out."""
        return {"semif_version": self.semif_version, **self.model_dump(mode="json", exclude_unset=True)}

    def in_order(self, option_ids: list[str]) -> list[OptionScore]:
        """The option scores in ``option_ids``' order; `ValueError` unless the ids are exactly those."""
        by_id = {o.id: o for o in self.options}
        if len(by_id) != len(self.options) or sorted(by_id) != sorted(option_ids):
            raise ValueError("response options differ from the declared options")
        return [by_id[i] for i in option_ids]


def parse_response(body: Any) -> ScoreResponse:
    """Validate decoded JSON as a SemIf response; `ValueError` (pydantic's) when it is not one."""
    if isinstance(body, ScoreResponse):
        return body
    if not isinstance(body, dict):
        raise ValueError("a SemIf response is a JSON object")  # noqa: TRY004  (callers catch ValueError, as for pydantic's)
    return ScoreResponse.model_validate(body)
