"""Errors raised by the sidecar.

The tree::

    ShadowError                     base of everything the sidecar raises on purpose
    +-- RequestError                an API request the sidecar refuses (status, code, field)
    |   +-- Unauthorized            401 unauthorized: missing or wrong bearer token
    |   +-- StoreUnavailable        503 store_unavailable: an outcome could not be made durable
    |   +-- BadGateway              502 bad_gateway: proxy mode, the upstream cannot be reached
    |   +-- GatewayTimeout          504 gateway_timeout: proxy mode, the upstream did not accept or answer
    +-- IllegalEvent                a relay connection got an event its phase does not list (a bug)
    +-- ScorerCallError             one scorer call failed (raised only by `shadow.backends`)
        +-- ScorerTimeout           no answer within the attempt's timeout (row status ``timeout``)
        +-- ScorerOverloaded        503 / overloaded: retryable, honours ``retry_after``
        +-- ScorerThrottled         429 / throttling: retryable
        +-- ScorerUnavailable       connection refused or reset: retryable
        +-- ScorerRejected          the scorer refused the request (4xx): not retryable
        +-- ScorerFailed            500 or another unexpected answer: not retryable
        +-- InvalidScorerResponse   an answer that maps to no declared option (``invalid_response``)

Backends translate third-party exceptions into the `ScorerCallError` branch at one boundary each; the
dispatcher turns them into a proposals row's ``status`` / ``reason``. HTTP handlers render
`RequestError.to_json()`; the CLI prints one line. A catalog that does not validate raises
``contracts.errors.CatalogError`` (re-exported here); a body over ``SHADOW_MAX_BODY_BYTES`` is
``contracts.errors.BodyTooLarge`` (413), shared with the scorer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from contracts.errors import CatalogError, WireError

if TYPE_CHECKING:
    from enum import Enum


class ShadowError(Exception):
    """Base of every error the sidecar raises on purpose."""


class RequestError(ShadowError, WireError):
    """An API request the sidecar refuses, with its wire form (`contracts.errors.WireError`)."""


class Unauthorized(RequestError):
    """The decision type requires a bearer token and the request has none or a wrong one."""

    status = 401
    code = "unauthorized"


class StoreUnavailable(RequestError):
    """The record store could not make an outcome durable; the client should retry."""

    status = 503
    code = "store_unavailable"


class BadGateway(RequestError):
    """Proxy mode: the upstream cannot be reached."""

    status = 502
    code = "bad_gateway"


class GatewayTimeout(RequestError):
    """Proxy mode: the upstream did not accept, or sent nothing, in time."""

    status = 504
    code = "gateway_timeout"


class IllegalEvent(ShadowError):
    """A relay connection got an event that `shadow.proxy.states.TRANSITIONS` does not list for its phase.

    Nothing the client or the upstream sends can cause it: it means the relay itself is wrong (as h11's
    ``LocalProtocolError``), so it is raised, never passed over.
    """

    def __init__(self, phase: Enum, event: Enum) -> None:
        super().__init__(f"relay connection: no transition for event {event.value!r} "
                         f"in phase {phase.value!r}")
        self.phase = phase
        self.event = event


class ScorerCallError(ShadowError):
    """One scorer call failed; ``status``/``reason`` are what its proposals row says."""

    status: ClassVar[str] = "error"
    reason: ClassVar[str] = "scorer_error"
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ScorerTimeout(ScorerCallError):
    """No answer within the attempt's timeout."""

    status = "timeout"
    reason = "scorer_timeout"


class ScorerOverloaded(ScorerCallError):
    """The scorer answered 503 overloaded (``Retry-After`` honoured within the deadline)."""

    reason = "scorer_overloaded"
    retryable = True


class ScorerThrottled(ScorerCallError):
    """The scorer or its API throttled the call (429, ThrottlingException)."""

    reason = "scorer_throttled"
    retryable = True


class ScorerUnavailable(ScorerCallError):
    """The connection was refused or reset."""

    reason = "scorer_unavailable"
    retryable = True


class ScorerRejected(ScorerCallError):
    """The scorer refused the request as invalid (4xx): retrying cannot help."""

    reason = "scorer_rejected"


class ScorerFailed(ScorerCallError):
    """The scorer failed (500) or answered something unexpected."""


class InvalidScorerResponse(ScorerCallError):
    """The answer maps to no declared option, or does not follow SemIf."""

    status = "invalid_response"
    reason = "no_matching_option"


__all__ = ["BadGateway", "CatalogError", "GatewayTimeout", "IllegalEvent", "InvalidScorerResponse",
           "RequestError", "ScorerCallError", "ScorerFailed", "ScorerOverloaded", "ScorerRejected",
           "ScorerThrottled", "ScorerTimeout", "ScorerUnavailable", "ShadowError", "StoreUnavailable",
           "Unauthorized", "WireError"]
