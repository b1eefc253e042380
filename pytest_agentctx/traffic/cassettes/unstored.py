"""Which request and response headers a cassette never stores (and vcrpy's ``headers``
matcher never compares): the rules over :mod:`.redact`'s tables of unstored headers, with
AWS Signature Version 4's headers, which are made anew for every call.
"""

from __future__ import annotations

from pytest_agentctx.traffic.cassettes.redact import (
    UNSTORED_REQUEST_HEADERS,
    UNSTORED_RESPONSE_HEADERS,
)

#: AWS Signature Version 4 request headers, signed or drawn anew for every call (the time,
#: the payload's hash, a session token, the SDK's invocation id and attempt; the X-Ray
#: trace id botocore adds inside AWS Lambda): never stored, so never compared. A SigV4
#: ``Authorization`` is dropped too (see :func:`unstored_request_header`), where others
#: are stored ``REDACTED``.
SIGV4_REQUEST_HEADERS = frozenset(
    {
        "x-amz-date",
        "x-amz-security-token",
        "x-amz-content-sha256",
        "x-amz-user-agent",
        "amz-sdk-invocation-id",
        "amz-sdk-request",
        "x-amzn-trace-id",
    }
)


def unstored_request_header(name: str, value: str) -> bool:
    """Whether a request header is left out of a cassette (and of the headers vcrpy's
    ``headers`` matcher compares): wire-level and volatile ones
    (:data:`UNSTORED_REQUEST_HEADERS`, the SDKs' ``x-stainless-*``), AWS SigV4's
    (:data:`SIGV4_REQUEST_HEADERS`, an ``Authorization`` of the ``AWS4-`` schemes)."""
    lowered = name.lower()
    return (
        lowered in UNSTORED_REQUEST_HEADERS
        or lowered in SIGV4_REQUEST_HEADERS
        or lowered.startswith("x-stainless-")
        or (lowered == "authorization" and value.startswith("AWS4-"))
    )


def unstored_response_header(name: str, method: str) -> bool:
    """Whether a response header (its name in lower case) is left out of a cassette: those
    of :data:`UNSTORED_RESPONSE_HEADERS`, but the ``content-length`` of a response to
    ``HEAD``, which has no body to frame: it tells the size of what a ``GET`` would get
    (botocore's ``head_object`` reads it as the object's ``ContentLength``)."""
    if name == "content-length" and method.upper() == "HEAD":
        return False
    return name in UNSTORED_RESPONSE_HEADERS
