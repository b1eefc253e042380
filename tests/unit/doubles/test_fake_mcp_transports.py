"""Unit tests of the fake MCP server's transports (doubles.fake_mcp.memory, .http, and stdio
through traffic.mcp.stdio's local_server): the mcp SDK's in-memory streams, streamable HTTP
answered in-process, and a stdio server that is never spawned, through the real SDK."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent

from pytest_agentctx.doubles.fake_mcp import FakeMcp
from pytest_agentctx.traffic.capture.exchange import TrafficRecorder

PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
ACCEPT = {"accept": "application/json, text/event-stream"}


@pytest.fixture
def fake() -> Iterator[FakeMcp]:
    fake = FakeMcp("orders").tool("get_order", {"id": 42, "status": "shipped"})
    with fake:
        yield fake


@pytest.fixture
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("fake_mcp opened a socket")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


async def test_a_session_over_the_in_memory_streams_calls_a_tool() -> None:
    fake = FakeMcp().tool("get_order", "shipped")
    async with fake.session() as session:
        result = await session.call_tool("get_order", {"order_id": 42})
    assert result.content == [TextContent(type="text", text="shipped")]
    assert fake.called("get_order", order_id=42)


async def test_the_in_memory_streams_carry_what_the_client_sent_in_order() -> None:
    fake = FakeMcp().tool("get_order", "shipped")
    async with fake.streams() as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
    assert fake.methods == ["initialize", "notifications/initialized", "tools/list"]


async def test_the_sdk_calls_a_tool_over_streamable_http(fake: FakeMcp, no_sockets: None) -> None:
    async with (
        streamable_http_client(fake.url) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("get_order", {"order_id": 42})
    assert result.structuredContent == {"id": 42, "status": "shipped"}


async def test_the_sdk_closes_its_http_session_with_delete(fake: FakeMcp) -> None:
    async with (
        streamable_http_client(fake.url) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
    assert [(e.method, e.status) for e in fake.exchanges][-1] == ("DELETE", 200)


async def test_initialize_over_http_opens_a_session(
    fake: FakeMcp, client: httpx.AsyncClient
) -> None:
    response = await client.post(fake.url, json=INITIALIZE, headers=ACCEPT)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["mcp-session-id"] == "fake-mcp-session-1"
    assert response.json()["result"]["serverInfo"]["name"] == "orders"


async def _session(fake: FakeMcp, client: httpx.AsyncClient) -> dict[str, str]:
    response = await client.post(fake.url, json=INITIALIZE, headers=ACCEPT)
    return {**ACCEPT, "mcp-session-id": response.headers["mcp-session-id"]}


async def test_a_notification_over_http_is_accepted(
    fake: FakeMcp, client: httpx.AsyncClient
) -> None:
    headers = await _session(fake, client)
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    response = await client.post(fake.url, json=note, headers=headers)
    assert (response.status_code, response.content) == (202, b"")


async def test_a_request_without_the_session_header_is_refused(
    fake: FakeMcp, client: httpx.AsyncClient
) -> None:
    await _session(fake, client)
    response = await client.post(fake.url, json=PING, headers=ACCEPT)
    assert response.status_code == 400


async def test_a_request_of_a_closed_session_is_not_found(
    fake: FakeMcp, client: httpx.AsyncClient
) -> None:
    headers = await _session(fake, client)
    assert (await client.delete(fake.url, headers=headers)).status_code == 200
    response = await client.post(fake.url, json=PING, headers=headers)
    assert response.status_code == 404


async def test_the_standalone_stream_is_not_allowed(
    fake: FakeMcp, client: httpx.AsyncClient
) -> None:
    headers = await _session(fake, client)
    response = await client.get(fake.url, headers=headers)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST, DELETE"


async def test_http_exchanges_are_kept_with_the_url(
    fake: FakeMcp, client: httpx.AsyncClient
) -> None:
    headers = await _session(fake, client)
    await client.post(fake.url, json=PING, headers=headers)
    [_, ping] = fake.exchanges
    assert (ping.method, ping.url, ping.status) == ("POST", fake.url, 200)
    assert ping.request == {"json": PING}
    assert ping.response == {"json": {"jsonrpc": "2.0", "id": 1, "result": {}}}


def test_a_sync_client_is_answered(fake: FakeMcp) -> None:
    with httpx.Client() as client:
        response = client.post(fake.url, json=INITIALIZE, headers=ACCEPT)
    assert response.json()["result"]["protocolVersion"] == "2025-06-18"


async def test_other_hosts_are_not_answered() -> None:
    fake = FakeMcp("orders")
    with fake:
        answered: Any = fake._http.handle(  # type: ignore[union-attr]
            httpx.Request("POST", "http://elsewhere.agentctx.invalid/mcp", json=PING)
        )
    assert answered is None


async def test_a_stopped_fake_answers_no_more(client: httpx.AsyncClient) -> None:
    fake = FakeMcp("orders")
    with fake:
        pass
    with pytest.raises(httpx.ConnectError):
        await client.post(fake.url, json=INITIALIZE, headers=ACCEPT)


def test_the_url_is_under_a_reserved_name() -> None:
    assert FakeMcp("Order Service").url == "http://order-service.agentctx.invalid/mcp"


async def test_the_sdk_calls_a_tool_over_stdio_without_a_process(
    fake: FakeMcp, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio

    def no_process(*args: object, **kwargs: object) -> None:
        raise AssertionError("a process was started")

    monkeypatch.setattr(anyio, "open_process", no_process)
    async with (
        stdio_client(fake.stdio_parameters()) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool("get_order", {"order_id": 42})
    assert result.structuredContent == {"id": 42, "status": "shipped"}
    assert fake.exchanges[0].url == "mcp+stdio://fake-mcp-orders/"


async def test_a_stopped_fake_does_not_answer_its_stdio_command() -> None:
    fake = FakeMcp("orders")
    with fake:
        pass
    with pytest.raises(FileNotFoundError):
        async with stdio_client(fake.stdio_parameters()):
            pass


async def test_a_witness_started_before_the_fake_sees_its_http_exchanges_once(
    client: httpx.AsyncClient,
) -> None:
    recorder = TrafficRecorder()
    recorder.start()
    try:
        with FakeMcp("orders") as fake:
            await client.post(fake.url, json=INITIALIZE, headers=ACCEPT)
    finally:
        recorder.stop()
    assert [(e.method, e.url, e.status) for e in recorder.exchanges] == [("POST", fake.url, 200)]


async def test_a_witness_started_after_the_fake_sees_its_http_exchanges_once(
    client: httpx.AsyncClient,
) -> None:
    recorder = TrafficRecorder()
    with FakeMcp("orders") as fake:
        recorder.start()
        try:
            await client.post(fake.url, json=INITIALIZE, headers=ACCEPT)
        finally:
            recorder.stop()
    assert [(e.method, e.url) for e in recorder.exchanges] == [("POST", fake.url)]


async def test_a_witness_sees_the_in_memory_exchanges() -> None:
    recorder = TrafficRecorder()
    fake = FakeMcp("orders").tool("get_order", "shipped")
    recorder.start()
    try:
        async with fake.session() as session:
            await session.call_tool("get_order", {})
    finally:
        recorder.stop()
    assert [e.url for e in recorder.exchanges] == ["mcp+stdio://fake-mcp-orders/"] * 4
    assert recorder.exchanges[2].request == {"json": fake.requests[2]}
    assert recorder.exchanges[2].response_json()["result"]["content"][0]["text"] == "shipped"


def test_a_witness_sees_the_http_exchanges_of_a_sync_client() -> None:
    recorder = TrafficRecorder()
    recorder.start()
    try:
        with FakeMcp("orders") as fake, httpx.Client() as client:
            client.post(fake.url, json=INITIALIZE, headers=ACCEPT)
    finally:
        recorder.stop()
    assert [(e.method, e.url) for e in recorder.exchanges] == [("POST", fake.url)]


def test_two_fakes_of_one_name_are_refused() -> None:
    with FakeMcp("orders"), pytest.raises(ValueError, match="give each fake of a test its own"):
        FakeMcp("orders").start()
