"""Mirror API bodies: validated with pydantic, errors name the field (``decisions[2].decision_type``)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from contracts.errors import InvalidRequest
from contracts.records import SOURCE_AUDIT
from contracts.semif import decode_json, format_loc
from shadow.errors import RequestError

if TYPE_CHECKING:
    from contracts.catalog import StateSpec

MAX_BATCH = 1000
_M = TypeVar("_M", bound=BaseModel)
Id = Annotated[str, Field(min_length=1, max_length=128)]
CLOCK_SKEW = timedelta(minutes=1)
"""How far in the future an ``outcome_at`` may be (clocks differ a little); beyond, refused."""
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
"""A JSON escape of half a UTF-16 pair: the only way a body gives a string that UTF-8 cannot hold."""
_AUDITOR = re.compile(r"[A-Za-z0-9_.:-]+")
"""An auditor id is pseudonymous: no '@' (an e-mail address is refused, not stored), no spaces (a name)."""


class DecisionIn(BaseModel):
    """One mirrored decision: its type (catalog name), id and state."""

    model_config = ConfigDict(extra="forbid", strict=True)

    decision_type: Id
    decision_id: Id
    state: str | dict[str, Any]


class DecisionBatch(BaseModel):
    """Several decisions in one request."""

    model_config = ConfigDict(extra="forbid", strict=True)

    decisions: Annotated[list[DecisionIn], Field(min_length=1, max_length=MAX_BATCH)]


class OutcomeIn(BaseModel):
    """What production decided, or (``source: "audit"``, records v1.2) what an auditor says was right."""

    model_config = ConfigDict(extra="forbid")

    decision_type: Id
    decision_id: Id
    outcome: Annotated[str, Field(min_length=1, max_length=256)]
    outcome_at: datetime | None = None
    source: Literal["api", "audit"] = "api"
    """``api`` (production's outcome) unless the caller says ``audit``; ``proxy`` is the proxy's own."""
    auditor: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    """An audit's pseudonymous auditor id (never an e-mail address: refused)."""
    audit_sample: Id | None = None
    """The id of the audit sample an audit answers."""

    @field_validator("auditor")
    @classmethod
    def _pseudonymous(cls, value: str | None) -> str | None:
        if value is not None and not _AUDITOR.fullmatch(value):
            msg = ("must be a pseudonymous id (letters, digits, '.', '_', '-', ':'), "
                   "never an e-mail address or a name")
            raise ValueError(msg)
        return value

    @field_validator("outcome_at")
    @classmethod
    def _not_in_the_future(cls, value: datetime | None) -> datetime | None:
        if value is not None:
            aware = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
            if aware > datetime.now(UTC) + CLOCK_SKEW:
                msg = "outcome_at is in the future"
                raise ValueError(msg)
        return value


class OutcomeBatch(BaseModel):
    """Several outcomes in one request."""

    model_config = ConfigDict(extra="forbid")

    outcomes: Annotated[list[OutcomeIn], Field(min_length=1, max_length=MAX_BATCH)]


def decode(body: bytes) -> Any:
    """JSON or a 400 naming the body: the scorer's `decode_json` (bad JSON, bad UTF-8, nesting too deep)."""
    try:
        return decode_json(body)
    except InvalidRequest as exc:
        raise RequestError(exc.message, field=exc.field) from exc


def refuse_lone_surrogates(body: bytes, items: list[DecisionIn], prefix: str) -> None:
    """A 400 naming the state that holds half a UTF-16 pair (no UTF-8 form: it could not be stored)."""
    if _SURROGATE_ESCAPE.search(body) is None:  # the common case costs one scan of the raw bytes
        return
    for i, item in enumerate(items):
        try:
            json.dumps(item.state, ensure_ascii=False).encode()
        except UnicodeEncodeError as exc:
            field = prefix.format(i) + "state"
            raise RequestError(f"{field}: holds a lone UTF-16 surrogate", field=field) from exc


def refuse_unredactable(items: list[DecisionIn], rules: list[StateSpec], prefix: str) -> None:
    """A 400 naming the first string ``state`` of a type with redaction rules.

    ``include``, ``remove`` and ``hash`` work on an object's fields; a string would be stored raw.
    """
    for i, (item, spec) in enumerate(zip(items, rules, strict=True)):
        if isinstance(item.state, str) and (spec.include or spec.remove or spec.hash):
            field = prefix.format(i) + "state"
            msg = (f"{field}: must be an object: the decision type has state rules (include, remove, hash) "
                   "that a string would bypass")
            raise RequestError(msg, field=field)


def _validate(model: type[_M], data: Any) -> _M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = format_loc(error["loc"])
        message = f"unknown field {field!r}" if error["type"] == "extra_forbidden" else error["msg"]
        raise RequestError(f"{field}: {message}" if field else message, field=field or "body") from exc


def parse_decisions(data: Any) -> tuple[list[DecisionIn], str]:
    """One decision or ``{"decisions": [...]}``; also returns the field prefix for error messages."""
    if isinstance(data, dict) and "decisions" in data:
        return _validate(DecisionBatch, data).decisions, "decisions[{}]."
    return [_validate(DecisionIn, data)], ""


def parse_outcomes(data: Any) -> tuple[list[OutcomeIn], str]:
    """One outcome or ``{"outcomes": [...]}``."""
    if isinstance(data, dict) and "outcomes" in data:
        return _validate(OutcomeBatch, data).outcomes, "outcomes[{}]."
    return [_validate(OutcomeIn, data)], ""


def check_audits(items: list[OutcomeIn], prefix: str) -> None:
    """A 400 naming the field: an audit needs ``auditor`` and ``audit_sample``; other outcomes carry none."""
    for i, item in enumerate(items):
        audit = item.source == SOURCE_AUDIT
        for name in ("auditor", "audit_sample"):
            given = getattr(item, name) is not None
            if given != audit:
                field = prefix.format(i) + name
                msg = (f"{field}: an audit (source 'audit') needs it" if audit
                       else f"{field}: only an audit (source 'audit') carries it")
                raise RequestError(msg, field=field)


def outcome_row(item: OutcomeIn, option_ids: list[str]) -> dict[str, Any]:
    """The outcomes row (records v1.2) for one reported outcome; ``in_options`` says if it is an option.

    An audit's answer may be `NONE_OF_THESE` (or any id outside the options): ``in_options`` false.
    """
    at = item.outcome_at or datetime.now(UTC)
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    return {"decision_id": item.decision_id, "decision_type": item.decision_type, "outcome": item.outcome,
            "outcome_at": at.astimezone(UTC), "source": item.source, "in_options": item.outcome in option_ids,
            "auditor": item.auditor, "audit_sample": item.audit_sample}
