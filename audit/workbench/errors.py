"""Errors of the workbench.

The tree::

    WorkbenchError          base; a `WireError`: rendered as ``{"error": {"code", "message", "field"}}``
    +-- BadField            400 invalid_request: a form or query field is missing or wrong (names it)
    +-- SignInRequired      401 unauthorized: no session, or a wrong sign-in token
    +-- Forbidden           403 forbidden: a write without its CSRF token, or from another origin
    +-- NotInSample         404 not_found: a decision that is not in this week's audit sample
    +-- StoreUnavailable    503 store_unavailable: the answer could not be made durable (not acknowledged)

    SetupError              not HTTP: the sample, catalog or tokens do not allow serving (one CLI line)
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


class StoreUnavailable(WorkbenchError):
    """The record store could not make the answer durable."""

    status = 503
    code = "store_unavailable"


class SetupError(Exception):
    """The workbench cannot start: the message is one line for the command line."""
