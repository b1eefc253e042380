"""MCP tool calls in the iteration context, read from hand-built interactions in the
cassettes' representation (stdio, streamable HTTP with JSON and SSE answers, legacy SSE)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_agentctx.traffic.capture import build_contexts
from pytest_agentctx.traffic.capture.mcp import same_arguments
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.errors import NotOneConversation
from pytest_agentctx.traffic.mcp.contract import names_match

CHAT = "https://api.openai.com/v1/chat/completions"
SYSTEM = {"role": "system", "content": "You run an order desk."}
USER = {"role": "user", "content": "Where is order 42?"}
ORDER = {"order_id": 42, "item": "blue mug", "status": "shipped"}
GET_ORDER_TOOL = {
    "name": "get_order",
    "description": "Look an order up.",
    "inputSchema": {
        "type": "object",
        "properties": {"order_id": {"type": "integer"}},
        "required": ["order_id"],
    },
}


def chat(messages: list[dict[str, Any]], reply: dict[str, Any]) -> Interaction:
    request = {"model": "gpt-4o-mini", "messages": messages}
    response = {
        "id": "chatcmpl-1",
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": reply, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
    return Interaction("POST", CHAT, {}, {"json": request}, 200, {}, {"json": response})


def call_reply(name: str = "get_order", arguments: str = '{"order_id": 42}') -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }


def result_message(content: str = json.dumps(ORDER)) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": "call_1", "content": content}


def stdio(message: dict[str, Any], *answers: dict[str, Any]) -> Interaction:
    lines = "".join(json.dumps(answer) + "\n" for answer in answers)
    return Interaction(
        "POST",
        "mcp+stdio://orders_server/",
        {"content-type": "application/json", "mcp-transport": "stdio"},
        {"json": message},
        200,
        {"content-type": "application/x-ndjson"},
        {"text": lines},
    )


def tools_call(id_: int, name: str = "get_order", **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": id_,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def answer(id_: int, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


ORDER_RESULT = {
    "content": [{"type": "text", "text": json.dumps(ORDER)}],
    "structuredContent": ORDER,
    "isError": False,
}


def run(*middle: Interaction, name: str = "get_order") -> list[Interaction]:
    """A model call asking for ``name``, the MCP traffic, the model call with the result."""
    first = chat([SYSTEM, USER], call_reply(name))
    last = chat(
        [SYSTEM, USER, call_reply(name), result_message()],
        {"role": "assistant", "content": "Order 42 has shipped."},
    )
    return [first, *middle, last]


def test_a_stdio_tools_call_joins_the_model_tool_call_it_carries_out() -> None:
    runs = build_contexts(run(stdio(tools_call(3, order_id=42), answer(3, ORDER_RESULT))))

    assert runs.context.iterations[0].metadata["mcp"] == [
        {
            "server": "orders_server",
            "transport": "stdio",
            "tool": "get_order",
            "arguments": {"order_id": 42},
            "tool_call_id": "call_1",
            "result": {"content": ORDER_RESULT["content"], "structuredContent": ORDER},
            "is_error": False,
            "error": None,
            "exchanges": [1],
        }
    ]


def test_the_tool_result_still_joins_its_call_as_for_any_tool() -> None:
    runs = build_contexts(run(stdio(tools_call(3, order_id=42), answer(3, ORDER_RESULT))))

    tool = runs.context.iterations[0].messages[-1]
    assert (tool.role, tool.tool_call_id, tool.name) == ("tool", "call_1", "get_order")


def test_a_call_with_other_arguments_is_kept_unjoined_in_the_current_iteration() -> None:
    runs = build_contexts(run(stdio(tools_call(3, order_id=7), answer(3, ORDER_RESULT))))

    (kept,) = runs.context.iterations[0].metadata["mcp"]
    assert (kept["tool_call_id"], kept["arguments"]) == (None, {"order_id": 7})


def test_a_tool_name_the_framework_prefixed_with_the_server_joins() -> None:
    runs = build_contexts(
        run(stdio(tools_call(3, order_id=42), answer(3, ORDER_RESULT)), name="orders_get_order")
    )

    assert runs.context.iterations[0].metadata["mcp"][0]["tool_call_id"] == "call_1"


def test_an_is_error_result_and_a_json_rpc_error_are_kept() -> None:
    failed = {"content": [{"type": "text", "text": "no order 7"}], "isError": True}
    error = {"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "Unknown tool"}}
    runs = build_contexts(
        run(
            stdio(tools_call(3, order_id=42), answer(3, failed)),
            stdio(tools_call(4, "refund", order_id=42), error),
        )
    )

    first, second = runs.context.iterations[0].metadata["mcp"]
    assert (first["is_error"], first["error"]) == (True, None)
    assert second["error"] == {"code": -32602, "message": "Unknown tool"}
    assert second["result"] is None


def test_a_stdio_answer_written_after_the_next_client_message_is_paired_by_id() -> None:
    progress = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}
    runs = build_contexts(
        run(stdio(tools_call(3, order_id=42)), stdio(progress, answer(3, ORDER_RESULT)))
    )

    (kept,) = runs.context.iterations[0].metadata["mcp"]
    assert (kept["result"]["structuredContent"], kept["exchanges"]) == (ORDER, [1, 2])


def http(
    method: str, url: str, sent: object, body: dict[str, Any] | None, status: int = 200
) -> Interaction:
    return Interaction(
        method, url, {}, {"json": sent} if sent is not None else None, status, {}, body
    )


def test_a_streamable_http_json_answer_joins() -> None:
    url = "http://127.0.0.1:8931/mcp"
    runs = build_contexts(
        run(http("POST", url, tools_call(1, order_id=42), {"json": answer(1, ORDER_RESULT)}))
    )

    (kept,) = runs.context.iterations[0].metadata["mcp"]
    assert (kept["server"], kept["transport"], kept["tool_call_id"]) == (url, "http", "call_1")


def test_a_streamable_http_sse_answer_joins() -> None:
    url = "http://127.0.0.1:8931/mcp"
    events = {"sse": [{"event": "message", "data": json.dumps(answer(1, ORDER_RESULT))}]}
    runs = build_contexts(run(http("POST", url, tools_call(1, order_id=42), events)))

    assert runs.context.iterations[0].metadata["mcp"][0]["result"]["structuredContent"] == ORDER


def test_a_legacy_sse_answer_comes_from_the_get_stream_opened_before() -> None:
    base = "http://127.0.0.1:8932"
    stream = {
        "sse": [
            {"event": "endpoint", "data": "/messages/?session_id=abc"},
            {"event": "message", "data": json.dumps(answer(2, ORDER_RESULT))},
        ]
    }
    posted = f"{base}/messages/?session_id=abc"
    interactions = run(
        http("GET", f"{base}/sse", None, stream),
        http("POST", posted, tools_call(2, order_id=42), None, 202),
    )
    runs = build_contexts([interactions[0], *interactions[1:]])

    (kept,) = runs.context.iterations[0].metadata["mcp"]
    assert (kept["tool_call_id"], kept["exchanges"]) == ("call_1", [2, 1])
    assert kept["result"]["structuredContent"] == ORDER


def test_non_tool_mcp_traffic_is_listed_with_the_other_non_llm_exchanges() -> None:
    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    runs = build_contexts(
        run(
            stdio(initialize, answer(0, {"protocolVersion": "2025-06-18"})),
            stdio(listing, answer(1, {"tools": [GET_ORDER_TOOL]})),
            stdio(tools_call(2, order_id=42), answer(2, ORDER_RESULT)),
        )
    )

    assert runs.non_llm_reasons == [
        "MCP over stdio (orders_server): initialize",
        "MCP over stdio (orders_server): tools/list",
        "MCP over stdio (orders_server): tools/call get_order",
    ]


def test_a_server_request_for_sampling_is_named_in_the_reason() -> None:
    sampling = {"jsonrpc": "2.0", "id": 0, "method": "sampling/createMessage", "params": {}}
    runs = build_contexts(run(stdio(tools_call(2, "summarise_order", order_id=42), sampling)))

    assert runs.non_llm_reasons == [
        "MCP over stdio (orders_server): tools/call summarise_order, "
        "sampling/createMessage (from the server)"
    ]


def test_the_tools_list_answer_is_the_servers_tool_contract() -> None:
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    runs = build_contexts(run(stdio(listing, answer(1, {"tools": [GET_ORDER_TOOL]}))))

    assert runs.tool_contract == {"orders_server": [GET_ORDER_TOOL]}


def test_a_paged_tools_list_adds_to_the_listing_it_continues() -> None:
    other = {"name": "cancel_order", "inputSchema": {"type": "object"}}
    first = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    page = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "2"}}
    runs = build_contexts(
        run(
            stdio(first, answer(1, {"tools": [GET_ORDER_TOOL], "nextCursor": "2"})),
            stdio(page, answer(2, {"tools": [other]})),
        )
    )

    assert [t["name"] for t in runs.tool_contract["orders_server"]] == ["get_order", "cancel_order"]


def test_mcp_calls_made_before_any_model_call_are_listed_on_the_runs() -> None:
    runs = build_contexts([stdio(tools_call(1, order_id=42), answer(1, ORDER_RESULT))])

    assert [call["tool"] for call in runs.mcp_calls] == ["get_order"]
    assert runs.contexts == []


def test_each_model_tool_call_is_joined_once() -> None:
    runs = build_contexts(
        run(
            stdio(tools_call(3, order_id=42), answer(3, ORDER_RESULT)),
            stdio(tools_call(4, order_id=42), answer(4, ORDER_RESULT)),
        )
    )

    ids = [call["tool_call_id"] for call in runs.context.iterations[0].metadata["mcp"]]
    assert ids == ["call_1", None]


def test_names_match_a_prefix_ending_with_a_separator_only() -> None:
    assert names_match("get_order", "get_order")
    assert names_match("mcp__orders__get_order", "get_order")
    assert names_match("orders.get_order", "get_order")
    assert not names_match("forget_order", "get_order")
    assert not names_match("get_order_v2", "get_order")


def test_arguments_given_as_null_are_left_out_of_the_comparison() -> None:
    assert same_arguments({"order_id": 42, "note": None}, {"order_id": 42})
    assert same_arguments({"order_id": 42.0}, {"order_id": 42})
    assert not same_arguments({"order_id": 42}, {"order_id": "42"})


def test_the_snapshot_of_a_context_shows_the_mcp_call_with_its_tool_calls_id() -> None:
    from pytest_agentctx.assertions.snapshots.serialization import serialize

    interactions = run(stdio(tools_call(3, order_id=42), answer(3, ORDER_RESULT)))
    text = serialize(build_contexts(interactions).context)

    assert "iterations[0].metadata.mcp[0].tool_call_id = <id:1>" in text
    assert "iterations[0].metadata.mcp[0].server = 'orders_server'" in text
    assert "iterations[0].metadata.mcp[0].is_error = False" in text
    assert text == serialize(build_contexts(interactions).context)


def test_a_test_with_only_mcp_traffic_names_the_stdio_server_when_asked_for_its_context() -> None:
    runs = build_contexts([stdio(tools_call(1, order_id=42), answer(1, ORDER_RESULT))])

    with pytest.raises(NotOneConversation, match=r"POST mcp\+stdio://orders_server/"):
        runs.context  # noqa: B018


def test_a_miss_on_changed_model_tools_names_the_field_and_the_mcp_server() -> None:
    from pytest_agentctx.traffic.capture.mcp import tools_miss_lines

    def request(argument: str) -> dict[str, Any]:
        schema = {"type": "object", "properties": {argument: {"type": "integer"}}}
        function = {"name": "get_order", "parameters": schema}
        return {"messages": [], "tools": [{"type": "function", "function": function}]}

    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    recorded = [stdio(listing, answer(1, {"tools": [GET_ORDER_TOOL]}))]

    lines = tools_miss_lines(request("order_id"), request("order_ref"), recorded)

    assert lines[1] == (
        "    tool get_order: inputSchema.properties.order_id removed; "
        "inputSchema.properties.order_ref added (integer)"
    )
    assert "MCP server orders_server" in lines[2]
    assert tools_miss_lines(request("order_id"), request("order_id"), recorded) == []
