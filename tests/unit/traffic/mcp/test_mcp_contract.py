"""The tool contract of an MCP server, and what changed in it."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from pytest_agentctx.traffic.mcp.contract import (
    ContractChange,
    contract_changes,
    model_tools_change,
    render_changes,
    tools_list_change,
)


def get_order(argument: str, kind: str = "integer") -> dict[str, Any]:
    return {
        "name": "get_order",
        "description": "Look an order up.",
        "inputSchema": {
            "type": "object",
            "properties": {argument: {"type": kind}},
            "required": [argument],
        },
    }


CANCEL = {"name": "cancel_order", "inputSchema": {"type": "object"}}


def test_a_renamed_argument_names_the_tool_and_both_fields() -> None:
    changes = contract_changes([get_order("order_id")], [get_order("order_ref")])

    assert render_changes(changes) == (
        "tool get_order: inputSchema.properties.order_id removed; "
        "inputSchema.properties.order_ref added (integer); "
        'inputSchema.required changed: ["order_id"] -> ["order_ref"]'
    )


def test_a_changed_type_shows_both_values() -> None:
    changes = contract_changes([get_order("order_id")], [get_order("order_id", "string")])

    assert changes == [
        ContractChange(
            "get_order", "changed", "inputSchema.properties.order_id.type", "integer", "string"
        )
    ]


def test_tools_added_and_removed_are_named() -> None:
    changes = contract_changes([get_order("order_id")], [CANCEL])

    assert render_changes(changes) == "tool get_order removed\ntool cancel_order added"


def test_changed_annotations_are_named() -> None:
    before = {**CANCEL, "annotations": {"destructiveHint": False}}
    after = {**CANCEL, "annotations": {"destructiveHint": True}}

    assert render_changes(contract_changes([before], [after])) == (
        "tool cancel_order: annotations.destructiveHint changed: false -> true"
    )


def test_a_tools_list_response_and_its_result_are_read_as_lists_of_tools() -> None:
    response = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [CANCEL]}}

    assert contract_changes(response, {"tools": [CANCEL]}) == []
    assert contract_changes(response, [CANCEL, get_order("order_id")]) == [
        ContractChange("get_order", "added")
    ]


def test_a_changed_tools_list_answer_says_what_changed_and_what_to_do() -> None:
    text = tools_list_change(
        [get_order("order_id")], [get_order("order_ref")], server="orders_server"
    )

    assert text is not None
    assert text.startswith("the tools of MCP server orders_server changed since the cassette")
    assert "  tool get_order: inputSchema.properties.order_id removed;" in text
    assert "pytest --agent-record" in text


def test_an_unchanged_tools_list_answer_says_nothing() -> None:
    assert tools_list_change([CANCEL], [dict(CANCEL)]) is None


def chat_request(argument: str) -> dict[str, Any]:
    tool = get_order(argument)
    function = {"name": "orders_get_order", "parameters": tool["inputSchema"]}
    return {
        "model": "gpt-4o-mini",
        "messages": [],
        "tools": [{"type": "function", "function": function}],
    }


def test_a_model_call_whose_mcp_tool_changed_names_the_tool_field_and_server() -> None:
    contract = {"orders_server": [get_order("order_id")]}

    text = model_tools_change(chat_request("order_id"), chat_request("order_ref"), contract)

    assert text is not None
    assert "  tool orders_get_order: inputSchema.properties.order_id removed;" in text
    assert "(tools of MCP server orders_server: its tool schema changed" in text


def test_model_tools_in_anthropic_format_are_compared_too() -> None:
    def request(argument: str) -> dict[str, Any]:
        schema = get_order(argument)["inputSchema"]
        return {"tools": [{"name": "get_order", "input_schema": schema}]}

    text = model_tools_change(request("order_id"), request("order_ref"))

    assert text is not None
    assert "MCP server" not in text
    assert "inputSchema.properties.order_ref added (integer)" in text


def test_model_calls_with_the_same_tools_say_nothing() -> None:
    assert model_tools_change(chat_request("order_id"), chat_request("order_id")) is None


# -- laws ------------------------------------------------------------------------------

NAMES = st.sampled_from(["get_order", "cancel_order", "refund", "list_orders"])
JSON_LEAF = st.none() | st.booleans() | st.integers() | st.text(max_size=5)


def _extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(children, max_size=3) | st.dictionaries(
        st.sampled_from(["type", "properties", "order_id", "items"]), children, max_size=3
    )


SCHEMAS = st.recursive(JSON_LEAF, _extend, max_leaves=5)
#: A machine shared with other work may draw slowly: the laws are checked all the same.
LAWS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOOLS = st.lists(
    st.fixed_dictionaries({"name": NAMES, "inputSchema": SCHEMAS}),
    max_size=4,
    unique_by=lambda tool: tool["name"],
)


@LAWS
@given(TOOLS)
def test_equal_lists_have_no_change(tools: list[dict[str, Any]]) -> None:
    assert contract_changes(tools, [dict(tool) for tool in tools]) == []


def _mirrored(change: ContractChange) -> tuple[str, str, str, str, str]:
    kind = {"added": "removed", "removed": "added"}.get(change.kind, change.kind)
    before, after = change.after, change.before
    return (change.tool, kind, change.field, repr(before), repr(after))


def _key(change: ContractChange) -> tuple[str, str, str, str, str]:
    return (change.tool, change.kind, change.field, repr(change.before), repr(change.after))


@LAWS
@given(TOOLS, TOOLS)
def test_changes_are_symmetric_in_added_and_removed(
    first: list[dict[str, Any]], second: list[dict[str, Any]]
) -> None:
    forward = sorted(_mirrored(change) for change in contract_changes(first, second))
    backward = sorted(_key(change) for change in contract_changes(second, first))

    assert forward == backward


@LAWS
@given(TOOLS, TOOLS)
def test_there_is_a_change_exactly_when_the_lists_differ_as_sets_of_tools(
    first: list[dict[str, Any]], second: list[dict[str, Any]]
) -> None:
    def by_name(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {tool["name"]: tool for tool in tools}

    assert (contract_changes(first, second) == []) == (by_name(first) == by_name(second))


def test_the_cassettes_contract_names_the_server_of_a_changed_model_tool() -> None:
    from pytest_agentctx.traffic.capture.mcp import read_mcp
    from pytest_agentctx.traffic.cassettes.fileformat import Interaction

    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    answer = {"jsonrpc": "2.0", "id": 1, "result": {"tools": [get_order("order_id")]}}
    recorded = Interaction(
        "POST",
        "mcp+stdio://orders_server/",
        {},
        {"json": listing},
        200,
        {},
        {"text": json.dumps(answer) + "\n"},
    )
    contract = read_mcp([recorded]).contract

    text = model_tools_change(chat_request("order_id"), chat_request("order_ref"), contract)

    assert text is not None
    assert "(tools of MCP server orders_server: its tool schema changed" in text
