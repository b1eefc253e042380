"""The miss message of an MCP request: what it asks of which server, field by field, and how
to re-record, as a model call's miss says it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_agentctx.traffic.cassettes import Interaction, RecordMode
from pytest_agentctx.traffic.cassettes.matcher import make_key
from pytest_agentctx.traffic.cassettes.misses import Miss, miss_message
from pytest_agentctx.traffic.cassettes.replay import Replays
from pytest_agentctx.traffic.mcp.wire import stdio_url

URL = stdio_url("orders")
TEST_ID = "tests/test_orders.py::test_order"
COMMAND = f'pytest --agent-record "{TEST_ID}"'


def _call(order_id: int, request_id: int = 3) -> dict[str, Any]:
    params = {"name": "get_order", "arguments": {"order_id": order_id}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _message(recorded: dict[str, Any], sent: dict[str, Any]) -> str:
    interaction = Interaction(
        method="POST",
        url=URL,
        request_headers={"content-type": "application/json"},
        request_body={"json": recorded},
        status=200,
        response_headers={},
        response_body=None,
    )
    keys = [make_key("POST", URL, recorded, None, ignored=[])]
    replays = Replays([interaction], keys, test_id="", shared=False, mode=RecordMode.NONE)
    key = make_key("POST", URL, sent, None, ignored=[])
    miss = Miss(key, sent, "the cassette has no such request")
    return miss_message(replays, miss, path=Path("c.json"), ignored=[], played=[], test_id=TEST_ID)


def test_the_miss_names_the_mcp_method_tool_and_server() -> None:
    first = _message(_call(42), _call(43)).splitlines()[0]
    assert first == (
        "Cassette c.json cannot answer MCP request tools/call get_order to server orders "
        "(POST orders/): the cassette has no such request."
    )


def test_the_miss_shows_the_differing_argument() -> None:
    lines = _message(_call(42), _call(43)).splitlines()
    assert "  params.arguments.order_id: recorded 42 != now 43" in lines


def test_the_miss_shows_no_id_difference() -> None:
    message = _message(_call(42, request_id=1), _call(43, request_id=9))
    assert "1 field differs: params.arguments.order_id" in message
    assert ".id" not in message.replace("order_id", "")


def test_the_miss_says_how_to_re_record() -> None:
    last = _message(_call(42), _call(43)).splitlines()[-1]
    assert last == f"If the agent's requests changed on purpose, re-record this test: {COMMAND}"
