"""Errors raised by the scorer.

The tree::

    ScorerError                     base of everything the scorer raises on purpose
    +-- SemIfError                  an error with a SemIf wire form (status, code, field)
    |   +-- InvalidRequest          400 invalid_request: bad JSON, schema violation, duplicate ids
    |   +-- PromptTooLong           400 prompt_too_long: question + options alone do not fit
    |   +-- BodyTooLarge            413 body_too_large
    |   +-- Overloaded              503 overloaded: the bounded queue is full
    |   +-- NotReady                503 not_ready: the model is still loading
    +-- ModelError                  the GGUF cannot be found or loaded
    +-- RuntimeFailure              llama.cpp returned an error code (a bug or resource exhaustion)

Edges (HTTP handlers, the CLI) render `SemIfError.to_json()`; nothing else leaks out. The wire form
itself lives in the `WireError` mixin, which the sidecar's `shadow.errors.RequestError` shares.
"""

from __future__ import annotations

from typing import Any, ClassVar


class ScorerError(Exception):
    """Base of every error the scorer raises on purpose."""


class WireError(Exception):
    """The JSON error wire form shared by every HTTP edge of the project (scorer and sidecar).

    ``{"error": {"code", "message", "field"}}`` with an HTTP status; subclasses set ``status`` and
    ``code``. It is a mixin for the error trees, not a branch of them.
    """

    status: ClassVar[int] = 400
    code: ClassVar[str] = "invalid_request"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def to_json(self) -> dict[str, Any]:
        """The error body: ``{"error": {"code", "message", "field"}}``."""
        return {"error": {"code": self.code, "message": self.message, "field": self.field}}


class SemIfError(ScorerError, WireError):
    """An error with a SemIf wire form: HTTP status, code, message and the offending field."""


class InvalidRequest(SemIfError):
    """The request does not follow the SemIf v1 schema."""


class PromptTooLong(SemIfError):
    """The question and options alone do not fit the context window."""

    code = "prompt_too_long"


class BodyTooLarge(SemIfError):
    """The request body is over the configured limit."""

    status = 413
    code = "body_too_large"


class Overloaded(SemIfError):
    """The bounded queue is full; the client may retry after ``retry_after`` seconds."""

    status = 503
    code = "overloaded"


class NotReady(SemIfError):
    """The model is still loading."""

    status = 503
    code = "not_ready"


class ModelError(ScorerError):
    """The GGUF file cannot be found, read or loaded."""


class RuntimeFailure(ScorerError):
    """llama.cpp returned an error code."""
