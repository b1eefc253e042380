"""A session mcp-recorder wrote, converted by ``pytest-agentctx mcp import`` into the
package's MCP interactions.

The held-out file (``corpus/mcp/``, see the MANIFEST) is mcp-recorder's own test cassette: a
FastMCP calculator over streamable HTTP, four tool calls answered as server-sent events,
then the client's ``DELETE`` and ``GET``. The command writes a cassette that reads back as
one HTTP interaction per client message, in order, each tool's result where it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentctx.cli.main import main
from pytest_agentctx.testing import load_cassette
from pytest_agentctx.traffic.mcp.wire import McpExchange, mcp_exchanges

pytestmark = pytest.mark.integration

SESSION = (
    Path(__file__).parent
    / "corpus"
    / "mcp"
    / ("mcp-recorder__streamable_http_calculator_session.json")
)


@pytest.fixture
def exchanges(tmp_path: Path) -> list[McpExchange]:
    out = tmp_path / "imported.json"
    assert main(["mcp", "import", str(SESSION), "--out", str(out)]) == 0
    return mcp_exchanges(load_cassette(out))


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
