"""Errors raised by the scorer.

The tree::

    ScorerError                     base of everything the scorer raises on purpose
    +-- SemIfError                  an error with a SemIf wire form (status, code, field)
    |   +-- PromptTooLong           400 prompt_too_long: question + options alone do not fit
    |   +-- Overloaded              503 overloaded: the bounded queue is full
    |   +-- NotReady                503 not_ready: the model is still loading
    +-- ModelError                  the GGUF cannot be found or loaded
    +-- RuntimeFailure              llama.cpp returned an error code (a bug or resource exhaustion)

A request that breaks the SemIf schema raises `contracts.errors.InvalidRequest` (400
``invalid_request``), re-exported here; a body over the limit is `contracts.errors.BodyTooLarge` (413),
shared with the sidecar. Edges (HTTP handlers, the CLI) render any `WireError`'s
``to_json()`` (`SemIfError` and `InvalidRequest` are both); nothing else leaks out. The wire form lives in
``contracts.errors.WireError``, which the sidecar's `shadow.errors.RequestError` shares.
"""

from __future__ import annotations

from contracts.errors import InvalidRequest, WireError


class ScorerError(Exception):
    """Base of every error the scorer raises on purpose."""


class SemIfError(ScorerError, WireError):
    """An error with a SemIf wire form: HTTP status, code, message and the offending field."""


class PromptTooLong(SemIfError):
    """The question and options alone do not fit the context window."""

    code = "prompt_too_long"


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


__all__ = ["InvalidRequest", "ModelError", "NotReady", "Overloaded", "PromptTooLong",
           "RuntimeFailure", "ScorerError", "SemIfError", "WireError"]
