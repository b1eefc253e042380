"""Unit tests of pytest_agentctx.traffic.transport: the Interceptor at the httpx2 transports.

Requests that a handler answers go to ``http://127.0.0.1:9/`` (the discard port): if they
passed through, they would fail to connect. Requests that must pass through go to a
loopback server the test starts itself.
"""

from __future__ import annotations

import asyncio
import contextvars
import ssl
import sys
import threading
from collections.abc import AsyncIterator

import httpx
import httpx2
import pytest
import pytest_httpx2  # noqa: F401  (registers respx's "httpcore2" mocker, for httpx2)
import respx

from pytest_agentctx.traffic.errors import UnscopedRequest
from pytest_agentctx.traffic.transport import (
    Handler,
    Interceptor,
    WireRequest,
    WireResponse,
    answered_by_another_tool,
    dispatch_async,
    dispatch_sync,
    forward_async,
    forward_sync,
    handlers_before,
    is_async_request,
    make_response,
    tee_response,
)
from pytest_agentctx.traffic.transport.responses import as_httpx2

UNREACHABLE = "http://127.0.0.1:9/v1/chat/completions"
# One TLS context for the clients: building one per client costs ~80 ms. The transport is
# still the default httpx2.(Async)HTTPTransport.
_TLS = ssl.create_default_context()


def _answer(text: str):
    def handler(request: WireRequest) -> WireResponse:
        return httpx2.Response(200, text=text)

    return handler


def _pass(request: WireRequest) -> None:
    return None


@pytest.fixture
async def loopback_url() -> AsyncIterator[str]:
    """A one-line HTTP server on 127.0.0.1 that answers every request with 'from the server'."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        body = b"from the server"
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        yield f"http://127.0.0.1:{port}/v1/embeddings"


# -- answering -----------------------------------------------------------------------


async def test_handler_answers_an_async_client_with_the_default_transport():
    seen: list[str] = []

    def handler(request: WireRequest) -> WireResponse:
        seen.append(f"{request.method} {request.url}")
        return httpx2.Response(200, json={"answered": True})

    with Interceptor(handler):
        async with httpx2.AsyncClient() as client:
            response = await client.post(UNREACHABLE, json={"model": "gpt-4o-mini"})

    assert (response.status_code, response.json()) == (200, {"answered": True})
    assert seen == [f"POST {UNREACHABLE}"]


def test_handler_answers_a_sync_client_with_the_default_transport():
    with Interceptor(_answer("intercepted")), httpx2.Client() as client:
        response = client.get(UNREACHABLE)

    assert response.text == "intercepted"


async def test_async_handler_answers_an_async_client():
    async def handler(request: WireRequest) -> WireResponse:
        await asyncio.sleep(0)
        return httpx2.Response(201, text="async answer")

    with Interceptor(handler):
        async with httpx2.AsyncClient(verify=_TLS) as client:
            response = await client.get(UNREACHABLE)

    assert (response.status_code, response.text) == (201, "async answer")


async def test_handler_sees_the_body_of_a_streamed_async_request():
    bodies: list[bytes] = []

    def handler(request: WireRequest) -> WireResponse:
        bodies.append(request.content)
        return httpx2.Response(200)

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"model": '
        yield b'"gpt-4o-mini"}'

    with Interceptor(handler):
        async with httpx2.AsyncClient(verify=_TLS) as client:
            await client.post(UNREACHABLE, content=chunks())

    assert bodies == [b'{"model": "gpt-4o-mini"}']


def test_awaitable_handler_on_a_sync_client_is_a_type_error():
    async def handler(request: WireRequest) -> WireResponse:
        return httpx2.Response(200)

    with (
        Interceptor(handler),
        httpx2.Client(verify=_TLS) as client,
        pytest.raises(TypeError, match=r"returned an awaitable for a request made by a sync"),
    ):
        client.get(UNREACHABLE)


# -- passing through -----------------------------------------------------------------


async def test_request_no_handler_answers_reaches_the_real_async_transport(loopback_url):
    with Interceptor(_pass):
        async with httpx2.AsyncClient(trust_env=False, verify=_TLS) as client:
            response = await client.post(loopback_url, json={"input": "hi"})

    assert response.text == "from the server"


async def test_request_no_handler_answers_reaches_the_real_sync_transport(loopback_url):
    with Interceptor(_pass), httpx2.Client(trust_env=False, verify=_TLS) as client:
        response = await asyncio.to_thread(client.get, loopback_url)

    assert response.text == "from the server"


async def test_mock_transport_clients_are_not_intercepted():
    offered: list[WireRequest] = []

    def handler(request: WireRequest) -> WireResponse:
        offered.append(request)
        return httpx2.Response(200, text="intercepted")

    mock = httpx2.MockTransport(lambda request: httpx2.Response(200, text="from the mock"))
    with Interceptor(handler):
        async with httpx2.AsyncClient(transport=mock) as client:
            response = await client.get(UNREACHABLE)

    assert (response.text, offered) == ("from the mock", [])


# -- nesting -------------------------------------------------------------------------


async def test_newest_handler_is_asked_first():
    with Interceptor(_answer("outer")), Interceptor(_answer("inner")):
        async with httpx2.AsyncClient(verify=_TLS) as client:
            response = await client.get(UNREACHABLE)

    assert response.text == "inner"


async def test_handler_returning_none_lets_an_older_handler_answer():
    asked: list[str] = []

    def newest(request: WireRequest) -> None:
        asked.append("newest")

    with Interceptor(_answer("older")), Interceptor(newest):
        async with httpx2.AsyncClient(verify=_TLS) as client:
            response = await client.get(UNREACHABLE)

    assert (response.text, asked) == ("older", ["newest"])


async def test_stopping_the_newest_interceptor_gives_requests_back_to_the_older_one():
    outer = Interceptor(_answer("outer"))
    inner = Interceptor(_answer("inner"))
    with outer:
        inner.start()
        inner.stop()
        async with httpx2.AsyncClient(verify=_TLS) as client:
            response = await client.get(UNREACHABLE)

    assert response.text == "outer"


# -- installation --------------------------------------------------------------------


def test_start_patches_both_transports():
    sync_original = httpx2.HTTPTransport.handle_request
    async_original = httpx2.AsyncHTTPTransport.handle_async_request

    with Interceptor(_pass):
        patched = (
            httpx2.HTTPTransport.handle_request,
            httpx2.AsyncHTTPTransport.handle_async_request,
        )

    assert patched[0] is not sync_original
    assert patched[1] is not async_original


def test_stop_restores_the_original_transport_methods():
    sync_original = httpx2.HTTPTransport.handle_request
    async_original = httpx2.AsyncHTTPTransport.handle_async_request

    with Interceptor(_pass):
        pass

    assert httpx2.HTTPTransport.handle_request is sync_original
    assert httpx2.AsyncHTTPTransport.handle_async_request is async_original


def test_transports_stay_patched_until_the_last_interceptor_stops():
    sync_original = httpx2.HTTPTransport.handle_request
    first = Interceptor(_pass)
    second = Interceptor(_pass)
    first.start()
    second.start()

    first.stop()
    still_patched = httpx2.HTTPTransport.handle_request is not sync_original
    second.stop()

    assert still_patched
    assert httpx2.HTTPTransport.handle_request is sync_original


def test_stop_restores_the_transport_even_when_the_block_raises():
    async_original = httpx2.AsyncHTTPTransport.handle_async_request

    with pytest.raises(RuntimeError, match="boom"), Interceptor(_pass):
        raise RuntimeError("boom")

    assert httpx2.AsyncHTTPTransport.handle_async_request is async_original


def test_active_reflects_start_and_stop():
    interceptor = Interceptor(_pass)

    states = [interceptor.active]
    interceptor.start()
    states.append(interceptor.active)
    interceptor.stop()
    states.append(interceptor.active)

    assert states == [False, True, False]


async def test_starting_twice_registers_the_handler_once(loopback_url):
    asked: list[str] = []

    def handler(request: WireRequest) -> None:
        asked.append(request.url.path)

    interceptor = Interceptor(handler)
    interceptor.start()
    interceptor.start()
    try:
        async with httpx2.AsyncClient(trust_env=False, verify=_TLS) as client:
            await client.get(loopback_url)
    finally:
        interceptor.stop()

    assert asked == ["/v1/embeddings"]


def test_one_stop_undoes_a_double_start():
    sync_original = httpx2.HTTPTransport.handle_request
    interceptor = Interceptor(_pass)
    interceptor.start()
    interceptor.start()

    interceptor.stop()

    assert httpx2.HTTPTransport.handle_request is sync_original


def test_stop_without_start_changes_nothing():
    sync_original = httpx2.HTTPTransport.handle_request

    Interceptor(_pass).stop()

    assert httpx2.HTTPTransport.handle_request is sync_original


# -- httpx (the original library) ----------------------------------------------------


async def test_handler_also_answers_httpx_clients_with_an_httpx_response():
    def handler(request: WireRequest) -> WireResponse:
        return make_response(200, content=b"intercepted")

    with Interceptor(handler):
        async with httpx.AsyncClient(verify=_TLS) as client:
            response = await client.get(UNREACHABLE)

    assert (type(response), response.text) == (httpx.Response, "intercepted")


def test_stop_restores_the_httpx_transport_methods_too():
    sync_original = httpx.HTTPTransport.handle_request
    async_original = httpx.AsyncHTTPTransport.handle_async_request

    with Interceptor(_pass):
        pass

    assert httpx.HTTPTransport.handle_request is sync_original
    assert httpx.AsyncHTTPTransport.handle_async_request is async_original


# -- is_async_request ----------------------------------------------------------------


async def test_is_async_request_is_true_in_a_handler_for_an_async_client():
    seen: list[bool] = []

    def handler(request: WireRequest) -> WireResponse:
        seen.append(is_async_request())
        return httpx2.Response(200)

    with Interceptor(handler):
        async with httpx2.AsyncClient(verify=_TLS) as client:
            await client.get(UNREACHABLE)

    assert seen == [True]


def test_is_async_request_is_false_in_a_handler_for_a_sync_client():
    seen: list[bool] = []

    def handler(request: WireRequest) -> WireResponse:
        seen.append(is_async_request())
        return httpx2.Response(200)

    with Interceptor(handler), httpx2.Client(verify=_TLS) as client:
        client.get(UNREACHABLE)

    assert seen == [False]


def test_is_async_request_is_false_outside_a_handler():
    assert is_async_request() is False


# -- forward_sync / forward_async ----------------------------------------------------


async def test_forward_async_sends_the_request_to_the_real_transport(loopback_url):
    statuses: list[int] = []

    async def handler(request: WireRequest) -> WireResponse:
        response = await forward_async(request)
        statuses.append(response.status_code)
        return response

    with Interceptor(handler):
        async with httpx2.AsyncClient(trust_env=False, verify=_TLS) as client:
            response = await client.get(loopback_url)

    assert (statuses, response.text) == ([200], "from the server")


async def test_forward_sync_sends_the_request_to_the_real_transport(loopback_url):
    statuses: list[int] = []

    def handler(request: WireRequest) -> WireResponse:
        response = forward_sync(request)
        statuses.append(response.status_code)
        return response

    with Interceptor(handler), httpx2.Client(trust_env=False, verify=_TLS) as client:
        response = await asyncio.to_thread(client.get, loopback_url)

    assert (statuses, response.text) == ([200], "from the server")


def test_forward_sync_outside_a_handler_is_an_error():
    with pytest.raises(
        RuntimeError, match=r"^forward_sync\(\) is only available inside an interceptor handler$"
    ):
        forward_sync(httpx2.Request("GET", UNREACHABLE))


async def test_forward_async_outside_a_handler_is_an_error():
    with pytest.raises(
        RuntimeError, match=r"^forward_async\(\) is only available inside an interceptor handler$"
    ):
        await forward_async(httpx2.Request("GET", UNREACHABLE))


async def test_forward_sync_for_an_async_client_says_to_use_forward_async():
    def handler(request: WireRequest) -> WireResponse:
        return forward_sync(request)

    with Interceptor(handler):
        async with httpx2.AsyncClient(verify=_TLS) as client:
            with pytest.raises(
                RuntimeError,
                match=r"forward_sync\(\) called for an async client; use forward_async\(\)",
            ):
                await client.get(UNREACHABLE)


async def test_forward_async_for_a_sync_client_says_to_use_forward_sync():
    def handler(request: WireRequest) -> WireResponse:
        return asyncio.run(forward_async(request))

    with (
        Interceptor(handler),
        httpx2.Client(verify=_TLS) as client,
        pytest.raises(
            RuntimeError,
            match=r"forward_async\(\) called for a sync client; use forward_sync\(\)",
        ),
    ):
        await asyncio.to_thread(client.get, UNREACHABLE)


# -- make_response -------------------------------------------------------------------


def test_make_response_outside_a_handler_builds_an_httpx2_response():
    response = as_httpx2(make_response(201, content=b"created", headers={"x-request-id": "req_1"}))

    assert (type(response), response.status_code, response.content) == (
        httpx2.Response,
        201,
        b"created",
    )
    assert response.headers["x-request-id"] == "req_1"


def test_make_response_without_content_has_an_empty_body():
    assert as_httpx2(make_response(204)).content == b""


def test_make_response_with_chunks_keeps_each_chunk():
    response = as_httpx2(
        make_response(
            200,
            headers=[("content-type", "text/event-stream")],
            chunks=[b"data: {}\n\n", b"data: [DONE]\n\n"],
        )
    )

    assert list(response.iter_raw()) == [b"data: {}\n\n", b"data: [DONE]\n\n"]


async def test_a_chunked_response_reaches_an_async_client_chunk_by_chunk():
    def handler(request: WireRequest) -> WireResponse:
        return make_response(200, chunks=[b"one ", b"two ", b"three"])

    with Interceptor(handler):
        async with (
            httpx2.AsyncClient(verify=_TLS) as client,
            client.stream("GET", UNREACHABLE) as response,
        ):
            chunks = [chunk async for chunk in response.aiter_raw()]

    assert chunks == [b"one ", b"two ", b"three"]


# -- tee_response --------------------------------------------------------------------


async def test_tee_response_passes_the_live_body_through_and_keeps_a_copy(loopback_url):
    copies: list[tuple[bytes, bool]] = []

    async def handler(request: WireRequest) -> WireResponse:
        live = await forward_async(request)
        return tee_response(live, lambda body, complete: copies.append((body, complete)))

    with Interceptor(handler):
        async with httpx2.AsyncClient(trust_env=False, verify=_TLS) as client:
            response = await client.get(loopback_url)

    assert response.text == "from the server"
    assert copies == [(b"from the server", True)]


async def test_tee_response_reports_a_body_the_client_stopped_reading(loopback_url):
    copies: list[tuple[bytes, bool]] = []

    async def handler(request: WireRequest) -> WireResponse:
        live = await forward_async(request)
        return tee_response(live, lambda body, complete: copies.append((body, complete)))

    with Interceptor(handler):
        async with (
            httpx2.AsyncClient(trust_env=False, verify=_TLS) as client,
            client.stream("GET", loopback_url) as response,
        ):
            async for _ in response.aiter_raw():
                break

    assert copies == [(b"from the server", False)]


def test_tee_response_outside_a_handler_is_an_error():
    with pytest.raises(
        RuntimeError, match=r"^tee_response\(\) is only available inside an interceptor handler$"
    ):
        tee_response(httpx2.Response(200), lambda body, complete: None)


def test_handlers_before_lists_the_older_active_handlers_newest_first():
    first, second, third = _answer("first"), _answer("second"), _answer("third")
    with Interceptor(first), Interceptor(second), Interceptor(third):
        older = handlers_before(third)

    assert older == [second, first]


def test_handlers_before_an_inactive_handler_is_empty():
    with Interceptor(_answer("active")):
        older = handlers_before(_answer("never started"))

    assert older == []


# -- other tools: respx --------------------------------------------------------------

WEATHER = "https://weather.example/v1/now?city=Paris"


def _recording(offered: list[str], text: str = "intercepted"):
    def handler(request: WireRequest) -> WireResponse:
        offered.append(f"{request.method} {request.url}")
        return make_response(200, content=text.encode())

    return handler


async def test_a_respx_route_answers_an_httpx2_async_request_before_the_handlers():
    offered: list[str] = []

    with Interceptor(_recording(offered)), respx.mock(using="httpcore2") as router:
        route = router.get(WEATHER).respond(200, json={"sky": "sunny"})
        async with httpx2.AsyncClient(verify=_TLS) as client:
            response = await client.get(WEATHER)

    assert (response.json(), route.call_count, offered) == ({"sky": "sunny"}, 1, [])


def test_a_respx_route_answers_an_httpx2_sync_request_before_the_handlers():
    offered: list[str] = []

    with (
        Interceptor(_recording(offered)),
        respx.mock(using="httpcore2") as router,
        httpx2.Client(verify=_TLS) as client,
    ):
        route = router.get(WEATHER).respond(200, json={"sky": "sunny"})
        response = client.get(WEATHER)

    assert (response.json(), route.call_count, offered) == ({"sky": "sunny"}, 1, [])


async def test_a_default_respx_route_answers_an_httpx_async_request_before_the_handlers():
    offered: list[str] = []

    with Interceptor(_recording(offered)), respx.mock as router:
        route = router.get(WEATHER).respond(200, text="sunny")
        async with httpx.AsyncClient(verify=_TLS) as client:
            response = await client.get(WEATHER)

    assert (response.text, route.call_count, offered) == ("sunny", 1, [])


async def test_a_default_respx_route_answers_an_httpx_sync_request_before_the_handlers():
    offered: list[str] = []

    with (
        Interceptor(_recording(offered)),
        respx.mock as router,
        httpx.Client(verify=_TLS) as client,
    ):
        route = router.get(WEATHER).respond(200, text="sunny")
        response = await asyncio.to_thread(client.get, WEATHER)

    assert (response.text, route.call_count, offered) == ("sunny", 1, [])


async def test_a_respx_route_matching_the_body_answers_a_streamed_httpx2_request():
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"city": '
        yield b'"Paris"}'

    with Interceptor(_answer("intercepted")), respx.mock(using="httpcore2") as router:
        router.post(WEATHER, json={"city": "Paris"}).respond(201, text="sunny")
        async with httpx2.AsyncClient(verify=_TLS) as client:
            response = await client.post(WEATHER, content=chunks())

    assert (response.status_code, response.text) == (201, "sunny")


async def test_a_respx_route_under_a_base_url_answers_before_the_handlers():
    with (
        Interceptor(_answer("intercepted")),
        respx.mock(using="httpcore2", base_url="https://weather.example/v1") as router,
    ):
        router.get("/now").respond(200, text="sunny")
        async with httpx2.AsyncClient(verify=_TLS) as client:
            response = await client.get(WEATHER)

    assert response.text == "sunny"


async def test_a_request_respx_has_no_route_for_goes_to_the_handlers():
    offered: list[str] = []

    with (
        Interceptor(_recording(offered)),
        respx.mock(using="httpcore2", assert_all_mocked=False, assert_all_called=False) as router,
    ):
        route = router.get("https://weather.example/v1/forecast").respond(200, text="rain")
        async with httpx2.AsyncClient(verify=_TLS) as client:
            response = await client.get(WEATHER)

    assert (response.text, route.call_count, offered) == ("intercepted", 0, [f"GET {WEATHER}"])


async def test_a_pass_through_route_goes_to_the_handlers_and_counts_the_call():
    with Interceptor(_answer("intercepted")), respx.mock(using="httpcore2") as router:
        route = router.get(WEATHER).pass_through()
        async with httpx2.AsyncClient(verify=_TLS) as client:
            response = await client.get(WEATHER)
        calls = route.call_count

    assert (response.text, calls) == ("intercepted", 1)


async def _pass_through_calls(url: str) -> int:
    """How many calls respx counts on a pass-through route for one GET of ``url``."""
    with respx.mock(using="httpcore2") as router:
        route = router.get(url).pass_through()
        async with httpx2.AsyncClient(trust_env=False, verify=_TLS) as client:
            await client.get(url)
        return route.call_count


async def test_a_pass_through_route_forwarded_by_a_handler_counts_what_respx_counts(
    loopback_url,
):
    async def forward(request: WireRequest) -> WireResponse:
        return await forward_async(request)

    without = await _pass_through_calls(loopback_url)
    with Interceptor(forward):
        with_handler = await _pass_through_calls(loopback_url)

    assert with_handler == without


async def test_a_route_of_respx_for_httpx_does_not_take_an_httpx2_request():
    # respx's default mocker patches httpcore, which httpx2 clients never reach: without
    # this package, respx would not answer the request either.
    with (
        Interceptor(_answer("intercepted")),
        respx.mock(assert_all_called=False) as router,
    ):
        route = router.get(WEATHER).respond(200, text="sunny")
        async with httpx2.AsyncClient(verify=_TLS) as client:
            response = await client.get(WEATHER)

    assert (response.text, route.call_count) == ("intercepted", 0)


async def test_a_respx_side_effect_runs_once_per_request():
    calls: list[str] = []

    def side_effect(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.host)
        return httpx.Response(200, text="sunny")

    with Interceptor(_answer("intercepted")), respx.mock(using="httpcore2") as router:
        router.get(WEATHER).mock(side_effect=side_effect)
        async with httpx2.AsyncClient(verify=_TLS) as client:
            response = await client.get(WEATHER)

    assert (response.text, calls) == ("sunny", ["weather.example"])


async def test_the_handlers_answer_again_once_the_respx_router_stopped():
    with Interceptor(_answer("intercepted")):
        with respx.mock(using="httpcore2", assert_all_called=False) as router:
            router.get(WEATHER).respond(200, text="sunny")
        async with httpx2.AsyncClient(verify=_TLS) as client:
            response = await client.get(WEATHER)

    assert response.text == "intercepted"


async def test_a_witness_is_offered_a_request_respx_answers_and_sees_its_response():
    seen: list[tuple[bool, str]] = []
    older_offered: list[str] = []

    async def witness(request: WireRequest) -> WireResponse:
        response = as_httpx2(await forward_async(request))
        await response.aread()
        seen.append((answered_by_another_tool(), response.text))
        return response

    with (
        Interceptor(_recording(older_offered)),
        Interceptor(witness, witness=True),
        respx.mock(using="httpcore2") as router,
    ):
        router.get(WEATHER).respond(200, text="sunny")
        async with httpx2.AsyncClient(verify=_TLS) as client:
            response = await client.get(WEATHER)

    assert (response.text, seen, older_offered) == ("sunny", [(True, "sunny")], [])


async def test_handlers_before_lists_only_witnesses_for_a_request_respx_answers():
    older: list[object] = []
    plain, older_witness = _answer("plain"), _pass

    def newest(request: WireRequest) -> None:
        older.extend(handlers_before(newest))

    with (
        Interceptor(older_witness, witness=True),
        Interceptor(plain),
        Interceptor(newest, witness=True),
        respx.mock(using="httpcore2") as router,
    ):
        router.get(WEATHER).respond(200, text="sunny")
        async with httpx2.AsyncClient(verify=_TLS) as client:
            await client.get(WEATHER)

    assert older == [older_witness]


async def test_answered_by_another_tool_is_false_for_a_request_the_handlers_answer():
    seen: list[bool] = []

    def handler(request: WireRequest) -> WireResponse:
        seen.append(answered_by_another_tool())
        return httpx2.Response(200)

    with Interceptor(handler, witness=True):
        async with httpx2.AsyncClient(verify=_TLS) as client:
            await client.get(UNREACHABLE)

    assert seen == [False]


def test_answered_by_another_tool_is_false_outside_a_handler():
    assert answered_by_another_tool() is False


async def test_the_transport_does_not_import_respx_when_the_test_did_not(monkeypatch):
    for name in [name for name in sys.modules if name == "respx" or name.startswith("respx.")]:
        monkeypatch.delitem(sys.modules, name)

    with Interceptor(_answer("intercepted")):
        async with httpx2.AsyncClient(verify=_TLS) as client:
            response = await client.get(WEATHER)

    assert (response.text, "respx.mocks" in sys.modules) == ("intercepted", False)


# -- other client libraries: dispatch_sync / dispatch_async -----------------------------


def _sent_by_the_library(request: WireRequest) -> WireResponse:
    return httpx2.Response(203, text=f"sent {request.url.path}")


async def _sent_by_the_library_async(request: WireRequest) -> WireResponse:
    return _sent_by_the_library(request)


def test_a_request_of_another_library_is_answered_by_the_active_handler():
    request = httpx2.Request("GET", "http://weather.test/paris")

    with Interceptor(_answer("from the handler")):
        response = as_httpx2(dispatch_sync(request, _sent_by_the_library))

    assert (response.status_code, response.text) == (200, "from the handler")


async def test_a_request_of_another_library_no_handler_answers_goes_through_its_own_send():
    request = httpx2.Request("GET", "http://weather.test/paris")

    with Interceptor(lambda request: None):
        response = as_httpx2(await dispatch_async(request, _sent_by_the_library_async))

    assert (response.status_code, response.text) == (203, "sent /paris")


def test_a_handler_forwards_a_request_of_another_library_through_its_send():
    def forwarding(request: WireRequest) -> WireResponse:
        return forward_sync(request)

    with Interceptor(forwarding):
        response = as_httpx2(
            dispatch_sync(httpx2.Request("GET", "http://weather.test/rome"), _sent_by_the_library)
        )

    assert (response.status_code, response.text) == (203, "sent /rome")


# -- scopes: each interceptor answers for the context that started it ---------------------


async def _get(url: str = UNREACHABLE) -> str:
    async with httpx2.AsyncClient() as client:
        return (await client.get(url)).text


def _get_sync(url: str = UNREACHABLE) -> str:
    with httpx2.Client() as client:
        return client.get(url).text


async def test_two_runs_awaited_together_each_get_their_own_answers_interleaved():
    both_started = asyncio.Barrier(2)
    turns = [asyncio.Event() for _ in range(4)]  # paris 1, rome 1, paris 2, rome 2
    turns[0].set()

    async def run(city: str, mine: list[int]) -> list[str]:
        with Interceptor(_answer(f"from {city}")):
            await both_started.wait()
            answers = []
            for turn in mine:
                await turns[turn].wait()
                answers.append(await _get())
                if turn + 1 < len(turns):
                    turns[turn + 1].set()
            return answers

    paris, rome = await asyncio.gather(run("paris", [0, 2]), run("rome", [1, 3]))

    assert (paris, rome) == (["from paris"] * 2, ["from rome"] * 2)


async def test_an_interceptor_stopped_in_another_context_answers_no_more(loopback_url):
    interceptor = Interceptor(_answer("stopped"))
    started_in = contextvars.copy_context()
    started_in.run(interceptor.start)

    interceptor.stop()  # here, not in the context that started it

    answer = await asyncio.create_task(_get(loopback_url), context=started_in)
    assert (interceptor.active, answer) == (False, "from the server")


async def test_a_thread_without_context_gets_the_one_chain_of_interceptors():
    seen: list[str] = []

    def outer(request: WireRequest) -> WireResponse:
        seen.append("outer")
        return httpx2.Response(200, text="from outer")

    def inner(request: WireRequest) -> None:
        seen.append("inner")

    async def run() -> str:
        with Interceptor(inner):
            # run_in_executor runs the function in the thread without this context
            return await asyncio.get_running_loop().run_in_executor(None, _get_sync)

    with Interceptor(outer):
        answer = await asyncio.create_task(run())

    assert (answer, seen) == ("from outer", ["inner", "outer"])


async def test_a_thread_without_context_under_concurrent_scopes_is_refused():
    all_started = asyncio.Barrier(3)  # both runs, and the thread's asker
    interceptors = [Interceptor(_answer("paris")), Interceptor(_answer("rome"))]

    async def run(interceptor: Interceptor) -> None:
        with interceptor:
            await all_started.wait()
            await all_started.wait()  # the thread asked in between

    async def ask_from_a_thread() -> BaseException | None:
        await all_started.wait()
        errors: list[BaseException] = []

        def ask() -> None:
            try:
                _get_sync()
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=ask)
        thread.start()
        await asyncio.to_thread(thread.join)
        await all_started.wait()
        return errors[0] if errors else None

    *_, error = await asyncio.gather(*(run(i) for i in interceptors), ask_from_a_thread())

    assert isinstance(error, UnscopedRequest)
    assert f"did not send GET {UNREACHABLE}" in str(error)
    assert "contextvars.copy_context().run" in str(error)
    assert [i.refused for i in interceptors] == [[error], [error]]


async def test_asyncio_to_thread_carries_its_run_s_scope():
    both_started = asyncio.Barrier(2)

    async def run(city: str) -> str:
        with Interceptor(_answer(f"from {city}")):
            await both_started.wait()
            answer = await asyncio.to_thread(_get_sync)
            await both_started.wait()  # both active until both were answered
            return answer

    assert await asyncio.gather(run("paris"), run("rome")) == ["from paris", "from rome"]


async def test_nested_scopes_offer_the_innermost_first_and_no_sibling():
    seen: list[str] = []
    both_started = asyncio.Barrier(2)

    def handler(name: str, answers: bool):
        def handle(request: WireRequest) -> httpx2.Response | None:
            seen.append(name)
            return httpx2.Response(200, text=f"from {name}") if answers else None

        return handle

    async def inner(name: str, ask: bool) -> str:
        with Interceptor(handler(name, answers=False)):
            await both_started.wait()
            answer = await _get() if ask else ""
            await both_started.wait()  # both active until the request was answered
            return answer

    with Interceptor(handler("outer", answers=True)):
        answer, _ = await asyncio.gather(inner("inner", ask=True), inner("sibling", ask=False))

    assert (answer, seen) == ("from outer", ["inner", "outer"])


async def test_handlers_before_follow_the_scope_of_the_request():
    both_started = asyncio.Barrier(2)
    befores: dict[str, list[Handler]] = {}

    def outer(request: WireRequest) -> None:
        return None

    def recorder(name: str):
        def handle(request: WireRequest) -> WireResponse:
            befores[name] = handlers_before(handle)
            return httpx2.Response(200)

        return handle

    async def run(name: str) -> None:
        with Interceptor(recorder(name)):
            await both_started.wait()
            await _get()
            await both_started.wait()  # both active until both were answered

    with Interceptor(outer):
        await asyncio.gather(run("paris"), run("rome"))

    assert befores == {"paris": [outer], "rome": [outer]}


async def test_requests_of_another_library_follow_the_scope_too():
    both_started = asyncio.Barrier(2)

    async def run(city: str) -> str:
        with Interceptor(_answer(f"from {city}")):
            await both_started.wait()
            request = httpx2.Request("GET", "http://weather.test/now")
            response = as_httpx2(await dispatch_async(request, _sent_by_the_library_async))
            await both_started.wait()  # both active until both were answered
            return response.text

    assert await asyncio.gather(run("paris"), run("rome")) == ["from paris", "from rome"]
