"""Unit tests of pytest_agentctx.traffic.transport.dispatch's witnessed_sync and
witnessed_async: a handler that answers a request as another tool would (an in-process fake
server) shows it to the witnesses started before it, and to no other handler."""

from __future__ import annotations

from collections.abc import Awaitable

import httpx2

from pytest_agentctx.traffic.capture.exchange import TrafficRecorder
from pytest_agentctx.traffic.transport import (
    Interceptor,
    WireRequest,
    WireResponse,
    make_response,
    witnessed_async,
    witnessed_sync,
)

URL = "http://fake.agentctx.invalid/"


def _sync_fake(request: WireRequest) -> WireResponse:
    return witnessed_sync(_sync_fake, request, make_response(200, content=b"fake"))


def _async_fake(request: WireRequest) -> Awaitable[WireResponse]:
    return witnessed_async(_async_fake, request, make_response(200, content=b"fake"))


def test_a_witness_started_before_sees_a_sync_answer() -> None:
    recorder = TrafficRecorder()
    with recorder.interceptor, Interceptor(_sync_fake), httpx2.Client() as client:
        assert client.get(URL).content == b"fake"
    assert [(e.url, e.response) for e in recorder.exchanges] == [(URL, {"text": "fake"})]


async def test_a_witness_started_before_sees_an_async_answer() -> None:
    recorder = TrafficRecorder()
    with recorder.interceptor, Interceptor(_async_fake):
        async with httpx2.AsyncClient() as client:
            assert (await client.get(URL)).content == b"fake"
    assert [e.url for e in recorder.exchanges] == [URL]


def test_a_handler_that_is_no_witness_is_not_offered_it() -> None:
    offered: list[str] = []

    def other(request: WireRequest) -> None:
        offered.append(str(request.url))

    with Interceptor(other), Interceptor(_sync_fake), httpx2.Client() as client:
        client.get(URL)
    assert offered == []


def test_without_witnesses_the_answer_is_given_as_it_is() -> None:
    with Interceptor(_sync_fake), httpx2.Client() as client:
        assert client.get(URL).content == b"fake"
