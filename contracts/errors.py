"""Errors of the shared contracts.

The tree::

    ContractError               base of everything raised here on purpose
    +-- InvalidRequest          400 invalid_request: a SemIf request that breaks the schema (also a WireError)
    +-- CatalogError            the decision catalog does not validate (names the file and the field)
    +-- SettingsError           a setting from the environment or a flag is invalid (one line)

    WireError                   the JSON error wire form shared by every HTTP edge (a mixin)

Every HTTP edge of the project (the scorer server, the sidecar's API and proxy) renders a `WireError`
as ``{"error": {"code", "message", "field"}}`` with its ``status``.
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


class CatalogError(ContractError):
    """The decision catalog does not validate."""


class SettingsError(ContractError):
    """A setting is invalid; the message is one line naming the environment variable or the flag."""
