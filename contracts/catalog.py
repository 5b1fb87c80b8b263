"""The decision catalog: a YAML file declaring every decision type the sidecar mirrors.

`load_catalog` validates it with pydantic and raises `CatalogError` naming the file and the field
(``decision_types.tickets.sampling.rate: ...``). The sidecar runs it; the pipelines read which options
are high-consequence from it. The reference is in ``docs/sidecar.md``; an example is
``shadow/examples/catalog.yaml``.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from contracts.errors import CatalogError
from contracts.records import DEFAULT_CANDIDATE, NONE_OF_THESE
from contracts.semif import Normalization, format_loc

if TYPE_CHECKING:
    from pathlib import Path

Name = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.-]+$")]
Backend = Literal["local", "semif_http", "sagemaker", "chat"]
AnswerMode = Literal["json_schema", "json_object", "grammar", "free_text"]
MAX_CHALLENGERS = 8


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Option(_Strict):
    """One declared option, in order."""

    id: Annotated[str, Field(min_length=1, max_length=256)]
    text: Annotated[str, Field(min_length=1, max_length=4096)]
    high_consequence: bool = Field(
        default=False, description="a confident wrong proposal of it is a severe error (pipelines)")

    @model_serializer(mode="wrap")
    def _omit_unmarked(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave ``high_consequence: false`` out, so catalogs that never mark an option keep their sha256."""
        data: dict[str, Any] = handler(self)
        if not self.high_consequence:
            data.pop("high_consequence", None)
        return data


class StateSpec(_Strict):
    """How a mirrored request becomes the state: pick fields, then remove or hash (dotted paths)."""

    include: list[str] = Field(default_factory=list, description="fields kept (empty: the whole state)")
    remove: list[str] = Field(default_factory=list, description="fields deleted before anything sees them")
    hash: list[str] = Field(default_factory=list, description="fields replaced by hmac-sha256:<hex>")
    store: bool = Field(default=False, description="store the redacted state in the proposals row")
    scorer_sees: Literal["redacted", "included"] = Field(
        default="redacted", description="'included': a local scorer sees hashed fields in clear")


class Sampling(_Strict):
    """Deterministic sampling on a hash of decision_id, and a per-type rate cap."""

    rate: Annotated[float, Field(ge=0.0, le=1.0)] = 1.0
    max_per_second: Annotated[float, Field(gt=0)] | None = None
    salt: str = Field(default="", description="change to draw a different (still stable) sample")


class Scorer(_Strict):
    """Which scorer answers, and how long and how often the sidecar tries."""

    backend: Backend
    endpoint: str = Field(default="local", description="URL (semif_http, chat) or SageMaker endpoint name")
    endpoint_url: str | None = Field(default=None, description="sagemaker: API URL override")
    region: str = "us-east-1"
    model: str | None = Field(default=None, description="chat: model name sent in the body")
    normalization: Normalization = "none"
    timeout_s: Annotated[float, Field(gt=0, le=300)] = 2.0
    deadline_s: Annotated[float, Field(gt=0, le=3600)] = 10.0
    max_attempts: Annotated[int, Field(ge=1, le=10)] = 3
    backoff_base_s: Annotated[float, Field(ge=0)] = 0.05
    backoff_max_s: Annotated[float, Field(ge=0)] = 2.0
    max_tokens: Annotated[int, Field(ge=1, le=4096)] = 16
    answer_mode: AnswerMode = Field(
        default="json_schema",
        description="chat: how the answer is held to the option ids (json_schema: OpenAI/vLLM/llama.cpp "
        "response_format; json_object: llama-cpp-python's server; grammar: GBNF; free_text: none)",
    )
    top_logprobs: Annotated[int, Field(ge=0, le=20)] = Field(
        default=20, description="chat: alternatives per token asked for, for option probabilities (0: none)"
    )

    @model_validator(mode="after")
    def _endpoint_fits_backend(self) -> Scorer:
        if self.backend in {"semif_http", "chat"} and not re.match(r"^https?://", self.endpoint):
            raise ValueError(f"endpoint must be an http(s) URL for backend {self.backend}")
        if self.timeout_s > self.deadline_s:
            raise ValueError("timeout_s must not exceed deadline_s")
        return self


class Breaker(_Strict):
    """Circuit breaker per endpoint: open after consecutive failures, half-open after a pause."""

    failure_threshold: Annotated[int, Field(ge=1)] = 5
    reset_after_s: Annotated[float, Field(gt=0)] = 30.0


class Budget(_Strict):
    """Spend guard: scorer calls and tokens per hour for this type (unset: unlimited)."""

    calls_per_hour: Annotated[int, Field(ge=0)] | None = None
    tokens_per_hour: Annotated[int, Field(ge=0)] | None = None


class Extract(_Strict):
    """Where a value comes from in proxy mode: a dotted path in a JSON body, or a header."""

    source: Literal["request_json", "request_header", "response_json", "response_header"]
    path: str = Field(default="", description="dotted path in the JSON body ('' = all) or header name")


class Proxy(_Strict):
    """Proxy mode: which requests are this decision, and how to read its id, state and outcome."""

    method: str = "POST"
    path: str = Field(pattern=r"^/")
    decision_id: Extract
    state: Extract = Extract(source="request_json", path="")
    outcome: Extract | None = None
    outcome_statuses: list[int] = Field(default_factory=lambda: [200, 201])
    decision_statuses: list[int] = Field(
        default_factory=lambda: list(range(200, 300)),
        description="response statuses a decision is offered for (production refused the others)")


class DecisionType(_Strict):
    """One decision type: the question, options, state rules, sampling, scorers and limits.

    ``scorer`` is the champion, named ``champion`` (``default`` unless set); ``candidates`` adds
    challengers by name, each offered every sampled decision beside the champion.
    """

    question: Annotated[str, Field(min_length=1)]
    options: Annotated[list[Option], Field(min_length=2, max_length=256)]
    review_option: str | None = Field(default=None, description="the review / none-of-the-above option id")
    state: StateSpec = StateSpec()
    sampling: Sampling = Sampling()
    scorer: Scorer
    champion: Name = Field(default=DEFAULT_CANDIDATE, description="the candidate name of `scorer`")
    candidates: Annotated[dict[Name, Scorer], Field(max_length=MAX_CHALLENGERS)] = Field(
        default_factory=dict, description="challengers by name, scored beside the champion")
    breaker: Breaker = Breaker()
    budget: Budget = Budget()
    experiment_ends_at: datetime = Field(description="mirroring stops by itself after this instant (UTC)")
    auth_token_env: str | None = Field(default=None, description="env var holding the API bearer token")
    proxy: Proxy | None = None

    @model_validator(mode="after")
    def _options_consistent(self) -> DecisionType:
        ids = [o.id for o in self.options]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate option ids: {sorted({i for i in ids if ids.count(i) > 1})}")
        if NONE_OF_THESE in ids:
            raise ValueError(f"option id {NONE_OF_THESE!r} is reserved for an audit's 'none of these' answer")
        if self.review_option is not None and self.review_option not in ids:
            raise ValueError(f"review_option {self.review_option!r} is not one of the option ids")
        if self.experiment_ends_at.tzinfo is None:
            raise ValueError("experiment_ends_at needs a timezone (e.g. 2026-12-31T00:00:00Z)")
        if self.champion in self.candidates:
            raise ValueError(f"candidate {self.champion!r} has the champion's name")
        remote = [s.backend for s in self.scorers.values() if s.backend != "local"]
        if self.state.scorer_sees == "included" and remote:
            raise ValueError("state.scorer_sees: included is only allowed for the in-process local backend")
        return self

    @model_serializer(mode="wrap")
    def _omit_defaults(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Leave out an unnamed champion and no challengers, so older catalogs keep their sha256."""
        data: dict[str, Any] = handler(self)
        if self.champion == DEFAULT_CANDIDATE:
            data.pop("champion", None)
        if not self.candidates:
            data.pop("candidates", None)
        return data

    @property
    def scorers(self) -> dict[str, Scorer]:
        """Every candidate's scorer by name, the champion first."""
        return {self.champion: self.scorer, **self.candidates}

    @property
    def option_ids(self) -> list[str]:
        """The declared option ids, in order."""
        return [o.id for o in self.options]

    def ended(self, now: datetime | None = None) -> bool:
        """Whether the experiment end date has passed."""
        return (now or datetime.now(UTC)) >= self.experiment_ends_at


class Catalog(_Strict):
    """The whole catalog file."""

    version: Literal[1] = 1
    decision_types: Annotated[dict[Name, DecisionType], Field(min_length=1)]

    @model_validator(mode="after")
    def _unique_proxy_routes(self) -> Catalog:
        seen: dict[tuple[str, str], str] = {}
        for name, dtype in self.decision_types.items():
            if dtype.proxy is None:
                continue
            key = (dtype.proxy.method.upper(), dtype.proxy.path)
            if key in seen:
                raise ValueError(f"decision types {seen[key]!r} and {name!r} both claim proxy route {key}")
            seen[key] = name
        return self

    def sha256(self) -> str:
        """A hash of the validated catalog (``config_sha256`` in every row)."""
        text = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def parse_catalog(data: Any, source: str = "<catalog>") -> Catalog:
    """Validate decoded YAML as a catalog; raise `CatalogError` naming the first bad field."""
    try:
        return Catalog.model_validate(data)
    except ValidationError as exc:
        lines = []
        for error in exc.errors():
            field = format_loc(tuple(p for p in error["loc"] if not str(p).startswith("function-")))
            lines.append(f"{source}: {field or '<root>'}: {error['msg']}")
        raise CatalogError("\n".join(lines)) from exc


def load_catalog(path: Path) -> Catalog:
    """Read and validate a catalog YAML file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CatalogError(f"{path}: cannot read: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise CatalogError(f"{path}: not valid YAML: {exc}") from exc
    return parse_catalog(data, str(path))
