"""Unit tests of pytest_agentctx.traffic.capture.exchange's TrafficRecorder: what it keeps of
a response the client has not closed (an MCP server kept running answers its last message
on a stream that is still open when the test reads its context)."""

from __future__ import annotations

import httpx2

from pytest_agentctx.traffic.capture.exchange import TrafficRecorder
from pytest_agentctx.traffic.transport import Interceptor, WireRequest, WireResponse, make_response

URL = "http://stream.agentctx.invalid/"
CHUNKS = [b'{"a":1}\n', b'{"b":2}\n', b'{"c":3}\n']


def _streams(request: WireRequest) -> WireResponse:
    return make_response(200, headers={"content-type": "text/plain"}, chunks=CHUNKS)


def test_an_open_response_is_kept_as_far_as_the_client_read_it() -> None:
    recorder = TrafficRecorder()
    with (
        Interceptor(_streams),
        recorder.interceptor,
        httpx2.Client() as client,
        client.stream("GET", URL) as response,
    ):
        chunks = response.iter_raw()
        next(chunks)  # (the iterator kept: one dropped would close the stream)

        (exchange,) = recorder.exchanges

    assert exchange.response == {"json": {"a": 1}}


def test_a_closed_response_is_kept_whole() -> None:
    recorder = TrafficRecorder()
    with Interceptor(_streams), recorder.interceptor, httpx2.Client() as client:
        client.get(URL)

    assert [exchange.response for exchange in recorder.exchanges] == [
        {"text": '{"a":1}\n{"b":2}\n{"c":3}\n'}
    ]
