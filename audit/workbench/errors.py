"""Errors of the workbench.

The tree::

    WorkbenchError          base; a `WireError`: rendered as ``{"error": {"code", "message", "field"}}``
    +-- BadField            400 invalid_request: a field, a charset or a body that is missing or wrong
    +-- SignInRequired      401 unauthorized: no session, or a wrong sign-in token
    +-- Forbidden           403 forbidden: a write without its CSRF token, or from another origin
    +-- NotInSample         404 not_found: a decision that is not in this week's audit sample
    +-- MisdirectedHost     421 misdirected_request: a ``Host`` that is not a name of this workbench
    +-- TooManyAttempts     429 too_many_requests: sign-in locked for a while after wrong tokens
    +-- Unexpected          500 internal_error: a bug (logged with its traceback)
    +-- StoreUnavailable    503 store_unavailable: the answer could not be made durable (not acknowledged)

Why the workbench cannot start is not HTTP: ``audit.errors.SetupError``.
"""

from __future__ import annotations

from contracts.errors import WireError


class WorkbenchError(WireError):
    """Base of every error the workbench raises on purpose."""


class BadField(WorkbenchError):
    """A request field is missing or invalid."""


class SignInRequired(WorkbenchError):
    """The request needs a session (or the sign-in token was wrong)."""

    status = 401
    code = "unauthorized"


class Forbidden(WorkbenchError):
    """A write without a valid CSRF token, or from another origin."""

    status = 403
    code = "forbidden"


class NotInSample(WorkbenchError):
    """The decision is not in the served audit sample (or not of a type this session may audit)."""

    status = 404
    code = "not_found"


class MisdirectedHost(WorkbenchError):
    """The request names another site in ``Host`` (a DNS-rebinding page, a misrouted proxy)."""

    status = 421
    code = "misdirected_request"


class TooManyAttempts(WorkbenchError):
    """Too many wrong sign-in tokens lately, from this client or against a decision type."""

    status = 429
    code = "too_many_requests"

    def __init__(self, message: str, field: str | None, retry_after: int) -> None:
        super().__init__(message, field)
        self.retry_after = retry_after
        """Whole seconds until sign-in may be tried again (the ``Retry-After`` header)."""


class Unexpected(WorkbenchError):
    """Anything the workbench did not raise on purpose: a bug, logged."""

    status = 500
    code = "internal_error"


class StoreUnavailable(WorkbenchError):
    """The record store could not make the answer durable."""

    status = 503
    code = "store_unavailable"
