"""`POST /endpoints/{name}/invocations`: the sagemaker-runtime `InvokeEndpoint` API, emulated.

Point boto3's ``sagemaker-runtime`` client at this server (``endpoint_url="http://127.0.0.1:8080"``)
and the real client code runs end to end: SigV4 signing (the header is required and checked for shape;
there is no secret here to verify it against), the REST-JSON error mapping and botocore's retries.
Container answers are mapped the way SageMaker maps them:

    2xx                      passed through (``X-Amzn-Invoked-Production-Variant: AllTraffic``)
    4xx from the container   424 ``ModelError`` with ``OriginalStatusCode`` / ``OriginalMessage``
    503 overloaded           503 ``ServiceUnavailable`` (retryable: botocore retries 5xx)
    503 not_ready            429 ``ModelNotReadyException``
    5xx otherwise            500 ``InternalFailure``
"""

from __future__ import annotations

import json
import re

from aiohttp import web

from contracts.errors import http_error_json
from scorer.server.views import invocations

_ENDPOINT_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


async def invoke_endpoint(request: web.Request) -> web.StreamResponse:
    """Emulate InvokeEndpoint for one named endpoint (any name is served by this model)."""
    name = request.match_info["name"]
    if not _ENDPOINT_NAME.match(name):
        return _aws_error(400, "ValidationError", f"invalid endpoint name {name!r}")
    auth = request.headers.get("Authorization", "")
    if not auth.startswith("AWS4-HMAC-SHA256 Credential=") or "X-Amz-Date" not in request.headers:
        return _aws_error(403, "MissingAuthenticationTokenException", "request is not SigV4-signed")
    try:
        inner = await invocations(request)
    except web.HTTPException as exc:  # rendered by the middleware for /invocations; mapped here
        return _model_error(exc.status, json.dumps(http_error_json(exc.status, exc.reason)))
    except Exception as exc:
        from contracts.errors import WireError  # noqa: PLC0415

        if not isinstance(exc, WireError):
            raise
        body = json.dumps(exc.to_json())
        if exc.status == 503:
            code = "ServiceUnavailable" if exc.code == "overloaded" else "ModelNotReadyException"
            return _aws_error(503 if exc.code == "overloaded" else 429, code, body)
        return _model_error(exc.status, body)
    inner.headers["X-Amzn-Invoked-Production-Variant"] = "AllTraffic"
    return inner


def _model_error(status: int, original: str) -> web.Response:
    message = f'Received client error ({status}) from primary with message "{original}".'
    response = web.json_response(
        {
            "ErrorCode": "CLIENT_ERROR_FROM_MODEL",
            "OriginalStatusCode": status,
            "OriginalMessage": original,
            "message": message,
        },
        status=424,
    )
    response.headers["x-amzn-ErrorType"] = (
        "ModelError:http://internal.amazon.com/coral/com.amazonaws.sagemaker/"
    )
    return response


def _aws_error(status: int, code: str, message: str) -> web.Response:
    response = web.json_response({"message": message}, status=status)
    response.headers["x-amzn-ErrorType"] = f"{code}:http://internal.amazon.com/coral/com.amazonaws.sagemaker/"
    return response
