"""Unit tests of the transport's dispatch of ignored requests
(:mod:`pytest_agentctx.traffic.ignore`): decided before any handler or scope, sent when the
guards let their host through, else refused with the client's error and listed."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from pytest_agentctx.traffic import ignore
from pytest_agentctx.traffic.cassettes.network import NetworkGuard
from pytest_agentctx.traffic.errors import NetworkBlocked
from pytest_agentctx.traffic.transport import (
    Interceptor,
    WireRequest,
    WireResponse,
    dispatch_async,
    dispatch_sync,
)
from pytest_agentctx.traffic.transport.responses import as_httpx2


def _sent(request: WireRequest) -> WireResponse:
    return httpx2.Response(203, text=f"sent {request.url.host}{request.url.path}")


async def _sent_async(request: WireRequest) -> WireResponse:
    return _sent(request)


def _refused_by_the_handler(request: WireRequest) -> WireResponse:
    raise AssertionError(f"the handler was offered {request.url}")


class ClientError(Exception):
    """What a client raises when it cannot connect."""


def _client_error(request: WireRequest, blocked: NetworkBlocked) -> BaseException:
    return ClientError(str(blocked))


@pytest.fixture
def ignoring() -> Iterator[None]:
    before = ignore.use_session(["localhost", "models.example/v1/info"])
    try:
        yield
    finally:
        ignore.restore_session(before)
        ignore.take_not_sent()


@pytest.mark.usefixtures("ignoring")
def test_an_ignored_request_is_sent_without_being_offered_to_a_handler() -> None:
    # whatever its port: the host alone is compared
    request = httpx2.Request("GET", "http://localhost:8080/health")

    with Interceptor(_refused_by_the_handler):
        response = as_httpx2(dispatch_sync(request, _sent))

    assert (response.status_code, response.text) == (203, "sent localhost/health")


@pytest.mark.usefixtures("ignoring")
async def test_an_ignored_request_of_an_async_client_is_sent_without_a_handler() -> None:
    request = httpx2.Request("GET", "https://models.example/v1/info/gpt2")

    with Interceptor(_refused_by_the_handler):
        response = as_httpx2(await dispatch_async(request, _sent_async))

    assert response.text == "sent models.example/v1/info/gpt2"


@pytest.mark.usefixtures("ignoring")
def test_a_request_outside_the_ignored_path_is_the_handlers() -> None:
    request = httpx2.Request("GET", "https://models.example/v1/chat")

    with Interceptor(lambda request: httpx2.Response(200, text="from the handler")):
        response = as_httpx2(dispatch_sync(request, _sent))

    assert response.text == "from the handler"


@pytest.mark.usefixtures("ignoring")
def test_an_ignored_loopback_request_is_sent_while_the_network_is_blocked() -> None:
    request = httpx2.Request("GET", "http://localhost:8080/health")

    with NetworkGuard() as guard, Interceptor(_refused_by_the_handler):
        response = as_httpx2(dispatch_sync(request, _sent, refuse=_client_error))

    assert (response.text, guard.blocked) == ("sent localhost/health", [])


@pytest.mark.usefixtures("ignoring")
def test_an_ignored_allowed_host_is_sent_while_the_network_is_blocked() -> None:
    request = httpx2.Request("GET", "https://models.example/v1/info")

    with NetworkGuard(["*.example", "models.example"]), Interceptor(_refused_by_the_handler):
        response = as_httpx2(dispatch_sync(request, _sent, refuse=_client_error))

    assert response.text == "sent models.example/v1/info"


@pytest.mark.usefixtures("ignoring")
def test_an_ignored_host_the_guard_blocks_gets_the_clients_error_and_fails_nothing() -> None:
    request = httpx2.Request("GET", "https://models.example/v1/info")

    with (
        NetworkGuard() as guard,
        Interceptor(_refused_by_the_handler),
        pytest.raises(
            ClientError, match=r"did not send GET https://models\.example/v1/info"
        ) as raised,
    ):
        dispatch_sync(request, _sent, refuse=_client_error)

    assert isinstance(raised.value.__cause__, NetworkBlocked)
    assert guard.blocked == []  # the guard's verify() does not fail the test
    assert [n.text for n in ignore.take_not_sent()] == [
        "GET https://models.example/v1/info (ignored by 'models.example/v1/info' of "
        "agent_ignore_hosts)"
    ]


@pytest.mark.usefixtures("ignoring")
async def test_without_a_refuse_function_the_refusal_itself_is_raised() -> None:
    request = httpx2.Request("GET", "https://models.example/v1/info")

    with NetworkGuard(), pytest.raises(NetworkBlocked, match="an ignored request"):
        await dispatch_async(request, _sent_async)


@pytest.mark.usefixtures("ignoring")
def test_an_ignored_request_of_a_thread_of_an_ended_scope_is_not_late() -> None:
    import threading

    from pytest_agentctx.traffic import scopes

    go, answers = threading.Event(), []

    def later() -> None:
        go.wait()
        answers.append(
            as_httpx2(dispatch_sync(httpx2.Request("GET", "http://localhost/x"), _sent)).text
        )

    with Interceptor(_refused_by_the_handler):
        thread = threading.Thread(target=later)
        thread.start()
    try:
        go.set()
        thread.join()
    finally:
        scopes.forget_orphans()

    assert (answers, scopes.take_late()) == (["sent localhost/x"], [])
