"""Unit tests of pytest_agentctx.traffic.clients.httpx: what a handler gets of the headers
an ``httpx2`` request was given as ``bytes`` or ``str``.

Requests a handler answers go to ``http://127.0.0.1:9`` (the discard port): had one passed
through, it would fail to connect.
"""

from __future__ import annotations

import httpx2

from pytest_agentctx.traffic.transport import Interceptor, WireRequest, WireResponse

UNREACHABLE = "http://127.0.0.1:9"


def _send(headers: list[tuple[bytes, bytes]]) -> WireRequest:
    seen: list[WireRequest] = []

    def handler(request: WireRequest) -> WireResponse:
        seen.append(request)
        return httpx2.Response(200, json={})

    with Interceptor(handler), httpx2.Client() as client:
        client.get(UNREACHABLE + "/", headers=headers)
    [request] = seen
    return request


def test_a_bytes_header_value_reaches_the_handler_as_sent():
    request = _send([(b"User-Agent", b"Boto3/1.44.8"), (b"X-Amz-Date", b"20260101T000000Z")])

    assert (request.headers.get("user-agent"), request.headers.get("x-amz-date")) == (
        "Boto3/1.44.8",
        "20260101T000000Z",
    )


def test_a_latin1_bytes_header_value_is_read_as_latin1():
    request = _send([(b"X-Name", b"caf\xe9")])

    assert (dict(request.headers.raw)[b"X-Name"], request.headers.get("x-name")) == (
        b"caf\xe9",
        "café",
    )
