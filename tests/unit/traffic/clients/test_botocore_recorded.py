"""A replay botocore takes in one piece (:class:`responses.Recorded`, made by
:func:`responses.recorded_response`): botocore's response of it is the one it gets of the
``httpx2`` response made otherwise, and only the handler botocore's request is offered to
by the dispatch gives one; any other client, and a handler asking another, get the
library's response."""

from __future__ import annotations

import httpx2
from botocore.awsrequest import AWSRequest
from botocore.httpsession import URLLib3Session
from hypothesis import given, strategies as st

from pytest_agentctx.traffic.clients import botocore as client
from pytest_agentctx.traffic.transport import (
    Interceptor,
    WireRequest,
    WireResponse,
    handlers_before,
)
from pytest_agentctx.traffic.transport.dispatch import dispatch_sync
from pytest_agentctx.traffic.transport.responses import as_httpx2, recorded_response
from pytest_agentctx.traffic.transport.wire import Recorded

URL = "http://127.0.0.1:9/model/m/converse-stream"
_NAMES = st.sampled_from(
    ["content-type", "x-amzn-requestid", "content-length", "transfer-encoding", "server", "X-A"]
)
_VALUES = st.sampled_from(["application/json", "chunked", "3", "gzip", "BaseHTTP/0.6", ""])


def _answered_both_ways(
    status: int, headers: dict[str, str], chunks: list[bytes], streamed: bool
) -> tuple[WireResponse, WireResponse]:
    """The answer of a handler replaying a response, to a client that takes a recorded one
    (botocore's) and to one that does not."""

    def handler(_: WireRequest) -> WireResponse:
        return recorded_response(
            status, headers=headers, chunks=chunks, streamed=streamed, handler=handler
        )

    def never(_: WireRequest) -> httpx2.Response:
        raise AssertionError("sent")

    request = httpx2.Request("POST", URL, content=b"{}")
    with Interceptor(handler):
        return (
            dispatch_sync(request, never, takes_recorded=True),
            dispatch_sync(request, never),
        )


@given(
    st.sampled_from([200, 204, 304, 400, 404, 500, 503]),
    st.dictionaries(_NAMES, _VALUES, max_size=4),
    st.lists(st.binary(max_size=6), max_size=4),
    st.booleans(),
    st.sampled_from(["POST", "GET", "HEAD"]),
)
def test_botocore_gets_a_recorded_response_as_it_gets_its_httpx2_response(
    status: int, headers: dict[str, str], chunks: list[bytes], streamed: bool, method: str
):
    fast, made = _answered_both_ways(status, headers, chunks, streamed)
    assert type(fast) is Recorded

    slow = client.to_aws(as_httpx2(made), method=method, url=URL, live=False)
    fast = client.recorded_aws(fast, method=method, url=URL)

    assert (fast.status_code, fast.url, dict(fast.headers)) == (
        slow.status_code,
        slow.url,
        dict(slow.headers),
    )
    assert list(fast.raw.headers.items()) == list(slow.raw.headers.items())
    assert (fast.raw.reason, fast.raw.version, fast.raw.version_string) == (
        slow.raw.reason,
        slow.raw.version,
        slow.raw.version_string,
    )
    assert (fast.raw.chunked, fast.raw.length_remaining) == (
        slow.raw.chunked,
        slow.raw.length_remaining,
    )
    assert list(fast.raw.stream(3)) == list(slow.raw.stream(3))


def test_its_headers_stream_and_extensions_are_those_of_a_response():
    recorded = Recorded(200, (("content-type", "text/plain"),), b"hi")

    response = as_httpx2(recorded)

    assert (response.status_code, response.headers["content-type"], response.read()) == (
        200,
        "text/plain",
        b"hi",
    )
    assert recorded.extensions == {}


def _prepared() -> object:
    return AWSRequest(method="POST", url=URL, data=b"{}").prepare()


def test_only_the_handler_botocore_offers_its_request_gives_a_recorded_response():
    given_back: list[object] = []

    def older(_: WireRequest) -> WireResponse:
        answer = recorded_response(
            200,
            headers={"content-type": "text/plain"},
            chunks=[b"ok"],
            streamed=False,
            handler=older,
        )
        given_back.append(type(answer))
        return answer

    def newer(request: WireRequest) -> None:
        for handler in handlers_before(newer):  # a recorder asking the handlers below it
            handler(request)

    with Interceptor(older), Interceptor(newer):
        response = URLLib3Session().send(_prepared())

    assert given_back == [httpx2.Response, Recorded]
    assert (response.status_code, response.content) == (200, b"ok")


def test_a_client_other_than_botocore_gets_the_librarys_response():
    given_back: list[object] = []

    def handler(_: WireRequest) -> WireResponse:
        answer = recorded_response(
            200,
            headers={"content-type": "text/plain"},
            chunks=[b"ok"],
            streamed=True,
            handler=handler,
        )
        given_back.append(type(answer))
        return answer

    with Interceptor(handler), httpx2.Client() as http:
        response = http.post(URL, content=b"{}")

    assert given_back == [httpx2.Response]
    assert response.content == b"ok"


def test_non_ascii_headers_give_the_librarys_response_and_its_error():
    def handler(_: WireRequest) -> WireResponse:
        return recorded_response(
            200, headers={"x-note": "caf\u00e9"}, chunks=[b"ok"], streamed=False, handler=handler
        )

    with Interceptor(handler):
        try:
            URLLib3Session().send(_prepared())
        except UnicodeEncodeError:
            raised = True
        else:
            raised = False

    assert raised  # as httpx2.Headers raises for it, whatever the client
