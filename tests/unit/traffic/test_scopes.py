"""Unit tests of late requests (pytest_agentctx.traffic.scopes): work that an ended scope
left running (a task, a thread) is refused when it sends, never offered to the scope that
runs then; threads that serve whoever asks are not such work.

Requests go to ``http://127.0.0.1:9/`` (the discard port): one that was sent would fail
to connect, not pass.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Iterator

import httpx2
import pytest

from pytest_agentctx.traffic import scopes
from pytest_agentctx.traffic.errors import UnscopedRequest
from pytest_agentctx.traffic.transport import Interceptor, WireRequest, WireResponse

UNREACHABLE = "http://127.0.0.1:9/v1/chat/completions"


class _Owner:
    """A handler's owner with a test id, as a cassette is."""

    def __init__(self, test_id: str, answer: str) -> None:
        self.test_id = test_id
        self.answer = answer
        self.seen: list[str] = []

    def handle(self, request: WireRequest) -> WireResponse:
        self.seen.append(str(request.url))
        return httpx2.Response(200, text=self.answer)


def _ask() -> str | BaseException:
    try:
        with httpx2.Client() as client:
            return client.get(UNREACHABLE).text
    except Exception as exc:
        return exc


def _asker(go: threading.Event, outcome: list[str | BaseException]) -> Callable[[], None]:
    """A thread's target: once ``go`` is set, :func:`_ask` and keep its outcome."""

    def run() -> None:
        go.wait(10)
        outcome.append(_ask())

    return run


async def _ask_async() -> str | BaseException:
    try:
        async with httpx2.AsyncClient() as client:
            return (await client.get(UNREACHABLE)).text
    except Exception as exc:
        return exc


@pytest.fixture(autouse=True)
def _no_late_left() -> Iterator[None]:
    scopes.take_late()
    yield
    scopes.take_late()


async def test_a_task_of_an_ended_scope_is_refused_not_offered_to_the_next():
    first, second = _Owner("t.py::test_first", "first"), _Owner("t.py::test_second", "second")
    go = asyncio.Event()

    async def leftover() -> str | BaseException:
        await go.wait()
        return await _ask_async()

    with Interceptor(first.handle):
        task = asyncio.create_task(leftover())
    with Interceptor(second.handle):
        go.set()
        outcome = await task

    assert isinstance(outcome, UnscopedRequest)
    assert "that test t.py::test_first (_Owner) started" in str(outcome)
    assert (first.seen, second.seen) == ([], [])


async def test_a_late_request_is_kept_for_the_test_that_started_the_work():
    first = _Owner("t.py::test_first", "first")
    go = asyncio.Event()

    async def leftover() -> str | BaseException:
        await go.wait()
        return await _ask_async()

    with Interceptor(first.handle):
        task = asyncio.create_task(leftover())
    with Interceptor(_Owner("t.py::test_second", "second").handle):
        go.set()
        outcome = await task

    (late,) = scopes.take_late("t.py::test_first")
    assert (late.test_id, late.error) == ("t.py::test_first", outcome)
    assert scopes.take_late() == []


async def test_a_thread_an_ended_scope_left_running_is_refused():
    first, second = _Owner("t.py::test_first", "first"), _Owner("t.py::test_second", "second")
    go = threading.Event()
    outcome: list[str | BaseException] = []
    thread = threading.Thread(target=_asker(go, outcome))

    with Interceptor(first.handle):
        thread.start()
    with Interceptor(second.handle):
        go.set()
        await asyncio.to_thread(thread.join, 10)

    assert isinstance(outcome[0], UnscopedRequest)
    assert (first.seen, second.seen) == ([], [])


def test_a_pool_worker_started_in_an_ended_scope_serves_the_next():
    first, second = _Owner("t.py::test_first", "first"), _Owner("t.py::test_second", "second")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        with Interceptor(first.handle):
            assert pool.submit(_ask).result(10) == "first"  # the worker starts here
        with Interceptor(second.handle):
            answer = pool.submit(_ask).result(10)

    assert answer == "second"


async def test_a_thread_of_an_inner_scope_that_ended_is_answered_by_the_outer():
    outer, inner = _Owner("t.py::test_it", "outer"), _Owner("", "inner")
    go = threading.Event()
    outcome: list[str | BaseException] = []
    thread = threading.Thread(target=_asker(go, outcome))

    with Interceptor(outer.handle):
        with Interceptor(inner.handle):
            thread.start()
        go.set()
        await asyncio.to_thread(thread.join, 10)

    assert outcome == ["outer"]


async def test_the_transport_stays_patched_while_a_left_thread_runs():
    original = httpx2.HTTPTransport.handle_request
    go = threading.Event()
    outcome: list[str | BaseException] = []
    thread = threading.Thread(target=_asker(go, outcome))

    with Interceptor(_Owner("t.py::test_first", "first").handle):
        thread.start()
    patched_between = httpx2.HTTPTransport.handle_request is not original
    go.set()
    await asyncio.to_thread(thread.join, 10)
    with Interceptor(_Owner("t.py::test_second", "second").handle):
        pass

    assert patched_between
    assert isinstance(outcome[0], UnscopedRequest)  # refused between scopes too
    assert httpx2.HTTPTransport.handle_request is original  # given back once it ended


async def test_a_thread_marked_as_serving_is_never_late():
    first, second = _Owner("t.py::test_first", "first"), _Owner("t.py::test_second", "second")
    go = threading.Event()
    outcome: list[str | BaseException] = []
    thread = scopes.serving(threading.Thread(target=_asker(go, outcome)))

    with Interceptor(first.handle):
        thread.start()
    with Interceptor(second.handle):
        go.set()
        await asyncio.to_thread(thread.join, 10)

    assert outcome == ["second"]
