"""A session mcp-recorder wrote, converted by ``pytest-agentctx mcp import`` into the
package's MCP interactions.

The held-out file (``corpus/mcp/``, see the MANIFEST) is mcp-recorder's own test cassette: a
FastMCP calculator over streamable HTTP, four tool calls answered as server-sent events,
then the client's ``DELETE`` and ``GET``. The command writes a cassette that reads back as
one HTTP interaction per client message, in order, each tool's result where it was; the
mcp SDK's own streamable HTTP client replays it, every connection refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_agentctx.cli.main import main
from pytest_agentctx.testing import load_cassette
from pytest_agentctx.traffic.cassettes import Cassette, NetworkGuard
from pytest_agentctx.traffic.mcp.wire import McpExchange, mcp_exchanges

pytestmark = pytest.mark.integration

SESSION = (
    Path(__file__).parent
    / "corpus"
    / "mcp"
    / ("mcp-recorder__streamable_http_calculator_session.json")
)


@pytest.fixture
def imported(tmp_path: Path) -> Path:
    out = tmp_path / "imported.json"
    assert main(["mcp", "import", str(SESSION), "--out", str(out)]) == 0
    return out


@pytest.fixture
def exchanges(imported: Path) -> list[McpExchange]:
    return mcp_exchanges(load_cassette(imported))


def _sent(exchange: McpExchange) -> str:
    message = exchange.sent[0] if exchange.sent else {}
    name = message.get("params", {}).get("name")
    return " ".join(str(part) for part in (message.get("method", exchange.method), name) if part)


def test_each_client_message_is_one_http_interaction_in_order(exchanges: list[McpExchange]):
    assert [_sent(exchange) for exchange in exchanges] == [
        "initialize",
        "notifications/initialized",
        "tools/list",
        "tools/call add",
        "tools/call multiply",
        "tools/call echo",
        "tools/call get_weather",
        "DELETE",
        "GET",
    ]
    assert {exchange.server for exchange in exchanges} == {"http://127.0.0.1:8000/mcp"}
    assert {exchange.transport for exchange in exchanges} == {"http"}


def test_a_tool_result_is_the_answer_of_its_call(exchanges: list[McpExchange]):
    weather = exchanges[6]

    assert weather.received == [
        {
            "jsonrpc": "2.0",
            "id": 5,
            "result": {
                "content": [
                    {
                        "type": "text",
                        "text": '{"city":"London","temp_c":22,"condition":"sunny","humidity":45}',
                    }
                ],
                "structuredContent": {
                    "city": "London",
                    "temp_c": 22,
                    "condition": "sunny",
                    "humidity": 45,
                },
                "isError": False,
            },
        }
    ]


def test_the_tool_contract_is_kept(exchanges: list[McpExchange]):
    tools = exchanges[2].received[0]["result"]["tools"]

    assert [tool["name"] for tool in tools] == ["add", "multiply", "echo", "get_weather"]
    assert tools[0]["inputSchema"]["required"] == ["a", "b"]


def test_a_notification_is_accepted_without_an_answer(exchanges: list[McpExchange]):
    assert exchanges[1].received == []


async def _no_progress(progress: float, total: float | None, message: str | None) -> None:
    """A progress callback: the recorded client (FastMCP's) sent a progress token with
    every call, which the SDK's client sends only with one."""


async def test_the_sdk_client_replays_the_imported_session(imported: Path):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    calls: list[tuple[str, dict[str, Any]]] = [
        ("add", {"a": 2, "b": 3}),
        ("multiply", {"a": 3.5, "b": 2.0}),
        ("echo", {"message": "hello mcp-recorder"}),
        ("get_weather", {"city": "London"}),
    ]
    cassette = Cassette(imported)
    guard = NetworkGuard(reason="replaying an imported MCP session")
    cassette.start()
    guard.start()
    try:
        async with (
            streamable_http_client("http://127.0.0.1:8000/mcp") as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = await session.list_tools()
            results = [
                await session.call_tool(name, arguments, progress_callback=_no_progress)
                for name, arguments in calls
            ]
    finally:
        guard.stop()
        cassette.stop()
    cassette.check()

    assert [tool.name for tool in tools.tools] == ["add", "multiply", "echo", "get_weather"]
    assert [result.structuredContent for result in results] == [
        {"result": 5},
        {"result": 7.0},
        {"result": "hello mcp-recorder"},
        {"city": "London", "temp_c": 22, "condition": "sunny", "humidity": 45},
    ]
