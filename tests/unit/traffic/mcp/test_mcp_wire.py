"""MCP interactions in a cassette: which are MCP, and their exchanges read back."""

from __future__ import annotations

import json
from typing import Any

from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.mcp.wire import (
    McpExchange,
    is_jsonrpc,
    is_mcp,
    mcp_exchange,
    mcp_exchanges,
    stdio_url,
)

CALL = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_order"}}
RESULT = {"jsonrpc": "2.0", "id": 1, "result": {"content": []}}
PROGRESS = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}


def interaction(
    url: str,
    request_body: object = None,
    response_body: dict[str, Any] | None = None,
    method: str = "POST",
    headers: dict[str, str] | None = None,
) -> Interaction:
    return Interaction(
        method=method,
        url=url,
        request_headers=headers or {},
        request_body=None if request_body is None else {"json": request_body},
        status=200,
        response_headers={},
        response_body=response_body,
    )


def test_stdio_url_names_the_server() -> None:
    assert stdio_url("orders_server") == "mcp+stdio://orders_server/"


def test_a_jsonrpc_message_or_batch_is_jsonrpc() -> None:
    assert is_jsonrpc(CALL)
    assert is_jsonrpc([CALL, PROGRESS])
    assert is_jsonrpc(b'{"jsonrpc": "2.0", "method": "x"}')


def test_a_model_request_is_not_jsonrpc() -> None:
    assert not is_jsonrpc({"model": "gpt-4o", "messages": []})
    assert not is_jsonrpc([])
    assert not is_jsonrpc([CALL, {"model": "x"}])
    assert not is_jsonrpc(b"not json")


def test_a_stdio_interaction_is_mcp_and_reads_its_ndjson_lines() -> None:
    ndjson = "\n".join(json.dumps(m) for m in (PROGRESS, RESULT)) + "\n"
    stdio = interaction(stdio_url("orders"), CALL, {"text": ndjson})
    assert is_mcp(stdio)
    assert mcp_exchange(stdio, 3) == McpExchange(
        position=3,
        server="orders",
        transport="stdio",
        method="POST",
        sent=[CALL],
        received=[PROGRESS, RESULT],
    )


def test_a_single_stdio_answer_stored_as_json_is_read() -> None:
    stdio = interaction(stdio_url("orders"), CALL, {"json": RESULT})
    exchange = mcp_exchange(stdio, 0)
    assert exchange is not None
    assert exchange.received == [RESULT]


def test_an_http_post_with_an_sse_answer_is_read_without_its_query() -> None:
    sse = {"sse": [{"event": "message", "data": PROGRESS}, {"data": RESULT}]}
    post = interaction("http://127.0.0.1:8000/mcp?x=1", CALL, sse)
    exchange = mcp_exchange(post, 0)
    assert exchange is not None
    assert (exchange.server, exchange.transport) == ("http://127.0.0.1:8000/mcp", "http")
    assert exchange.received == [PROGRESS, RESULT]


def test_a_get_stream_with_a_session_header_is_mcp() -> None:
    get = interaction("http://127.0.0.1:8000/mcp", method="GET", headers={"Mcp-Session-Id": "abc"})
    exchange = mcp_exchange(get, 0)
    assert exchange is not None
    assert (exchange.method, exchange.sent) == ("GET", [])


def test_the_legacy_sse_stream_is_mcp() -> None:
    sse = {"sse": [{"event": "endpoint", "data": "/messages/?session_id=1"}]}
    assert is_mcp(interaction("http://127.0.0.1:8000/sse", method="GET", response_body=sse))


def test_a_model_call_is_not_mcp() -> None:
    model = interaction("https://api.openai.com/v1/chat/completions", {"model": "x"}, {"json": {}})
    assert not is_mcp(model)
    assert mcp_exchange(model, 0) is None


def test_mcp_exchanges_keep_their_positions() -> None:
    model = interaction("https://api.openai.com/v1/chat/completions", {"model": "x"})
    stdio = interaction(stdio_url("orders"), CALL, None)
    found = mcp_exchanges([model, stdio, model, stdio])
    assert [exchange.position for exchange in found] == [1, 3]
    assert found[0].received == []
