"""Errors of the shared contracts.

The tree::

    ContractError               base of everything raised here on purpose
    +-- InvalidRequest          400 invalid_request: a SemIf request that breaks the schema (also a WireError)
    +-- BodyTooLarge            413 body_too_large: a body over the service's limit (also a WireError)
    +-- CatalogError            the decision catalog does not validate (names the file and the field)
    +-- SettingsError           a setting from the environment or a flag is invalid (one line)

    WireError                   the JSON error wire form shared by every HTTP edge (a mixin)

Every HTTP edge of the project (the scorer server, the sidecar's API and proxy) renders a `WireError`
as ``{"error": {"code", "message", "field"}}`` with its ``status``; the errors the web framework raises
itself (no route, wrong method, a body over the limit, a wrong content type) get the codes in
`HTTP_CODES` and the field in `HTTP_FIELDS`, alike on every edge.
"""

from __future__ import annotations

from typing import Any, ClassVar


class ContractError(Exception):
    """Base of every error the contracts raise on purpose."""


class WireError(Exception):
    """The JSON error wire form: ``{"error": {"code", "message", "field"}}`` with an HTTP status.

    Subclasses set ``status`` and ``code``. It is a mixin for the packages' error trees, not a branch.
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


class InvalidRequest(ContractError, WireError):
    """The request does not follow the SemIf v1 schema (400 ``invalid_request``, names the field)."""


class BodyTooLarge(ContractError, WireError):
    """The request body is over the service's limit (413 ``body_too_large``, names ``body``)."""

    status = 413
    code = "body_too_large"


HTTP_CODES: dict[int, str] = {404: "not_found", 405: "method_not_allowed", 413: BodyTooLarge.code,
                              415: "unsupported_media_type"}
"""The wire code of each HTTP error the web framework raises itself; any other is ``http_error``."""
HTTP_FIELDS: dict[int, str] = {413: "body", 415: "Content-Type"}
"""The field such an error names, where it names one."""


def http_error_json(status: int, message: str) -> dict[str, Any]:
    """The wire form of an HTTP error the web framework raised (``HTTP_CODES``, ``HTTP_FIELDS``)."""
    return {"error": {"code": HTTP_CODES.get(status, "http_error"), "message": message,
                      "field": HTTP_FIELDS.get(status)}}


class CatalogError(ContractError):
    """The decision catalog does not validate."""


class SettingsError(ContractError):
    """A setting is invalid; the message is one line naming the environment variable or the flag."""
