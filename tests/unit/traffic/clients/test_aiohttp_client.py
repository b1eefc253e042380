"""Unit tests of pytest_agentctx.traffic.clients.aiohttp: aiohttp sessions through the
interceptors, the conversions between aiohttp and httpx2 objects, and aioresponses beside it.

Requests that a handler answers go to ``http://127.0.0.1:9/`` (the discard port): if they
reached the network they would fail to connect. Requests that must reach a server go to an
``aiohttp.web`` server on 127.0.0.1 that the test starts and stops.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import httpx2
import pytest
from aiohttp import web
from aioresponses import aioresponses
from yarl import URL

import pytest_agentctx.traffic.clients.aiohttp as aiohttp_client
from pytest_agentctx.traffic.clients import PATCHERS
from pytest_agentctx.traffic.transport import (
    Interceptor,
    WireRequest,
    WireResponse,
    forward_async,
    make_response,
    tee_response,
)

UNREACHABLE = "http://127.0.0.1:9"


def _answer(status: int = 200, **options) -> Any:
    seen: list[WireRequest] = []

    def handler(request: WireRequest) -> WireResponse:
        seen.append(request)
        return httpx2.Response(status, **options)

    handler.seen = seen  # type: ignore[attr-defined]
    return handler


@pytest.fixture
async def server() -> AsyncIterator[str]:
    """An aiohttp.web server on 127.0.0.1: /json, /gzip and /stream (three chunks)."""

    async def as_json(request: web.Request) -> web.Response:
        return web.json_response({"q": request.query.get("q")})

    async def gzipped(request: web.Request) -> web.Response:
        body = gzip.compress(b'{"packed": true}')
        headers = {"content-encoding": "gzip", "content-type": "application/json"}
        return web.Response(body=body, headers=headers)

    async def stream(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        for number in range(3):
            await response.write(f"data: {number}\n\n".encode())
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_get("/json", as_json)
    app.router.add_get("/gzip", gzipped)
    app.router.add_get("/stream", stream)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        port = runner.addresses[0][1]
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def _recorder(log: list[tuple[int, bytes, bool]]):
    async def handler(request: WireRequest) -> WireResponse:
        response = await forward_async(request)
        return tee_response(
            response, lambda body, done: log.append((response.status_code, body, done))
        )

    return handler


# -- the module and its patches ------------------------------------------------------


async def test_the_module_named_aiohttp_imports_the_real_aiohttp() -> None:
    imported = vars(aiohttp_client)["aiohttp"]

    assert imported is sys.modules["aiohttp"] is aiohttp
    assert Path(str(imported.__file__)).parent.name == "aiohttp"
    assert imported is not aiohttp_client


def test_its_patchers_are_registered() -> None:
    assert (aiohttp_client.install, aiohttp_client.uninstall) in PATCHERS


def test_without_an_interceptor_aiohttp_is_untouched() -> None:
    from aiohttp.client_reqrep import ClientRequest
    from aiohttp.connector import BaseConnector

    assert (BaseConnector.connect.__module__, ClientRequest.send.__module__) == (
        "aiohttp.connector",
        "aiohttp.client_reqrep",
    )


def test_an_interceptor_patches_aiohttp_while_it_is_active() -> None:
    from aiohttp.client_reqrep import ClientRequest

    with Interceptor(_answer()):
        during = ClientRequest.send.__module__

    assert (during, ClientRequest.send.__module__) == (
        "pytest_agentctx.traffic.clients.aiohttp",
        "aiohttp.client_reqrep",
    )


# -- requests: aiohttp to httpx2 -----------------------------------------------------


async def test_a_handler_gets_the_request_as_httpx2_with_its_body_read() -> None:
    handler = _answer(json={})
    with Interceptor(handler):
        async with aiohttp.ClientSession() as session:
            await session.post(
                UNREACHABLE + "/tools", params={"q": "1"}, json={"a": 1}, headers={"X-T": "y"}
            )

    [request] = handler.seen
    assert (request.method, str(request.url), request.headers["x-t"]) == (
        "POST",
        UNREACHABLE + "/tools?q=1",
        "y",
    )
    assert json.loads(request.content) == {"a": 1}


async def test_a_header_value_keeps_the_utf8_bytes_aiohttp_sends_for_it() -> None:
    handler = _answer(json={})
    with Interceptor(handler):
        async with aiohttp.ClientSession() as session:
            await session.get(UNREACHABLE + "/", headers={"X-Name": "café €"})

    [request] = handler.seen
    assert dict(request.headers.raw)[b"X-Name"] == "café €".encode()


# -- responses: httpx2 to aiohttp ----------------------------------------------------


async def test_a_handlers_answer_is_a_started_client_response() -> None:
    handler = _answer(404, json={"missing": True}, headers={"x-id": "7"})
    with Interceptor(handler):
        async with (
            aiohttp.ClientSession() as session,
            session.get(UNREACHABLE + "/thing") as response,
        ):
            got = (response.status, response.reason, response.headers["x-id"])
            body = await response.json()

    assert (got, body) == ((404, "Not Found", "7"), {"missing": True})


def _streamed(chunks: list[bytes]) -> WireResponse:
    """A response delivered in ``chunks``, as a cassette replays a stream."""
    return make_response(200, headers={"content-type": "text/event-stream"}, chunks=chunks)


async def test_a_streamed_answer_keeps_its_chunks_for_iter_any() -> None:
    chunks = [b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n"]
    with Interceptor(lambda request: _streamed(chunks)):
        async with (
            aiohttp.ClientSession() as session,
            session.get(UNREACHABLE + "/sse") as response,
        ):
            got = [chunk async for chunk in response.content.iter_any()]

    assert got == chunks


async def test_a_streamed_answer_is_read_line_by_line() -> None:
    with Interceptor(lambda request: _streamed([b"a\nb", b"\nc\n"])):
        async with (
            aiohttp.ClientSession() as session,
            session.get(UNREACHABLE + "/lines") as response,
        ):
            lines = [line async for line in response.content]

    assert lines == [b"a\n", b"b\n", b"c\n"]


async def test_a_gzip_answer_is_decoded_as_aiohttp_decodes_it() -> None:
    body = gzip.compress(b"unpacked")
    handler = _answer(content=body, headers={"content-encoding": "gzip"})
    with Interceptor(handler):
        async with aiohttp.ClientSession() as session:
            async with session.get(UNREACHABLE + "/z") as response:
                decoded = await response.read()
            async with session.get(UNREACHABLE + "/z", auto_decompress=False) as response:
                raw = await response.read()

    assert (decoded, raw) == (b"unpacked", body)


async def test_a_set_cookie_of_an_answer_reaches_the_cookie_jar() -> None:
    handler = _answer(headers={"set-cookie": "session=abc; Path=/"})
    with Interceptor(handler):
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as session:
            await session.get(UNREACHABLE + "/login")
            cookies = session.cookie_jar.filter_cookies(URL(UNREACHABLE))

    assert cookies["session"].value == "abc"


async def test_a_redirect_is_followed_by_aiohttp_one_request_at_a_time() -> None:
    seen: list[str] = []

    def handler(request: WireRequest) -> WireResponse:
        seen.append(request.url.path)
        if request.url.path == "/old":
            return httpx2.Response(301, headers={"location": "/new"})
        return httpx2.Response(200, text="here")

    with Interceptor(handler):
        async with (
            aiohttp.ClientSession() as session,
            session.get(UNREACHABLE + "/old") as response,
        ):
            got = (response.url.path, [r.status for r in response.history])
            text = await response.text()

    assert (seen, got, text) == (["/old", "/new"], ("/new", [301]), "here")


async def test_raise_for_status_raises_on_an_answered_error() -> None:
    with Interceptor(_answer(500)):
        async with aiohttp.ClientSession(raise_for_status=True) as session:
            with pytest.raises(aiohttp.ClientResponseError) as raised:
                await session.get(UNREACHABLE + "/boom")

    assert raised.value.status == 500


async def test_a_session_response_class_is_kept() -> None:
    class Mine(aiohttp.ClientResponse):
        pass

    with Interceptor(_answer(text="ok")):
        async with (
            aiohttp.ClientSession(response_class=Mine) as session,
            session.get(UNREACHABLE + "/mine") as response,
        ):
            assert isinstance(response, Mine)
            assert await response.text() == "ok"


# -- live responses, teed ------------------------------------------------------------


async def test_a_forwarded_response_is_teed_as_the_code_reads_it(server: str) -> None:
    log: list[tuple[int, bytes, bool]] = []
    with Interceptor(_recorder(log)):
        async with (
            aiohttp.ClientSession() as session,
            session.get(server + "/stream") as response,
        ):
            lines = [line async for line in response.content]

    assert lines == [b"data: 0\n", b"\n", b"data: 1\n", b"\n", b"data: 2\n", b"\n"]
    assert log == [(200, b"data: 0\n\ndata: 1\n\ndata: 2\n\n", True)]


async def test_a_forwarded_gzip_body_is_teed_raw_and_read_decoded(server: str) -> None:
    log: list[tuple[int, bytes, bool]] = []
    with Interceptor(_recorder(log)):
        async with (
            aiohttp.ClientSession() as session,
            session.get(server + "/gzip") as response,
        ):
            body = await response.json()
            encoding = response.headers["content-encoding"]

    assert (body, encoding) == ({"packed": True}, "gzip")
    assert gzip.decompress(log[0][1]) == b'{"packed": true}'


async def test_a_response_released_unread_is_teed_as_cut_short(server: str) -> None:
    log: list[tuple[int, bytes, bool]] = []
    with Interceptor(_recorder(log)):
        async with aiohttp.ClientSession() as session:
            response = await session.get(server + "/stream")
            response.release()

    assert log == [(200, b"", False)]


async def test_no_handler_answering_sends_the_request_on(server: str) -> None:
    with Interceptor(lambda request: None):
        async with (
            aiohttp.ClientSession() as session,
            session.get(server + "/json", params={"q": "live"}) as response,
        ):
            body = await response.json()

    assert body == {"q": "live"}


# -- aioresponses in the same test ---------------------------------------------------


class _MockedResponse(aiohttp.ClientResponse):
    """aioresponses 0.7.9 builds its responses without the ``stream_writer`` that aiohttp
    3.14 requires; given as its ``response_class``, this class supplies one."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("stream_writer", SimpleNamespace(output_size=0))
        super().__init__(*args, **kwargs)


@pytest.mark.parametrize("aioresponses_first", [False, True], ids=["after", "before"])
async def test_aioresponses_started_before_or_after_the_interceptor_answers_its_requests(
    aioresponses_first: bool,
) -> None:
    handler = _answer(text="from the cassette")
    with contextlib.ExitStack() as started:
        if not aioresponses_first:
            started.enter_context(Interceptor(handler))
        mocked = started.enter_context(aioresponses())
        if aioresponses_first:
            started.enter_context(Interceptor(handler))
        mocked.get(
            UNREACHABLE + "/mocked",
            payload={"from": "aioresponses"},
            response_class=_MockedResponse,
        )
        async with (
            aiohttp.ClientSession() as session,
            session.get(UNREACHABLE + "/mocked") as response,
        ):
            body = await response.json()

    assert (body, handler.seen) == ({"from": "aioresponses"}, [])


async def test_a_request_aioresponses_passes_through_reaches_the_handlers() -> None:
    handler = _answer(text="from the cassette")
    with aioresponses(passthrough=[UNREACHABLE]), Interceptor(handler):
        async with (
            aiohttp.ClientSession() as session,
            session.get(UNREACHABLE + "/through") as response,
        ):
            text = await response.text()

    assert text == "from the cassette"


def test_either_stopping_first_leaves_aiohttp_as_it_was() -> None:
    from aiohttp.client import ClientSession
    from aiohttp.client_reqrep import ClientRequest

    before = (ClientSession._request, ClientRequest.send)
    interceptor = Interceptor(_answer())
    mocked = aioresponses()
    interceptor.start()
    mocked.start()
    interceptor.stop()
    mocked.stop()

    assert (ClientSession._request, ClientRequest.send) == before
