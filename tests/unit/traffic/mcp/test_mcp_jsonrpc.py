"""JSON-RPC messages of MCP as matching compares them: the volatile fields ignored, exactly."""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from pytest_agentctx.traffic.cassettes.matcher import make_key
from pytest_agentctx.traffic.mcp.jsonrpc import (
    PLACEHOLDER,
    TRACE_CONTEXT,
    VOLATILE,
    describe,
    normalised,
    with_id,
)

ids = st.one_of(st.integers(), st.text(max_size=8))
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=8))


def _nest(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=5), children, max_size=3)
    )


values = st.recursive(scalars, _nest, max_leaves=8)
arguments = st.dictionaries(st.text(min_size=1, max_size=6), values, max_size=3)


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    """A client request, with or without a progress token."""
    params: dict[str, Any] = {"name": draw(st.text(max_size=6)), "arguments": draw(arguments)}
    if draw(st.booleans()):
        params["_meta"] = {"progressToken": draw(ids)}
    return {"jsonrpc": "2.0", "id": draw(ids), "method": "tools/call", "params": params}


def _key(message: object) -> object:
    return make_key("POST", "mcp+stdio://orders/", message, None, ignored=())


def _retoken(message: dict[str, Any], token: object) -> dict[str, Any]:
    params = message["params"]
    if "_meta" not in params:
        return message
    return {**message, "params": {**params, "_meta": {**params["_meta"], "progressToken": token}}}


@given(requests())
def test_normalised_is_idempotent(message: dict[str, Any]) -> None:
    once = normalised(message)
    assert normalised(once) == once


@given(requests(), ids, ids)
def test_messages_differing_only_in_volatile_fields_match(
    message: dict[str, Any], other_id: object, other_token: object
) -> None:
    other = _retoken(with_id(message, other_id), other_token)
    assert _key(other) == _key(message)


@given(requests(), arguments)
def test_messages_differing_in_any_other_field_do_not_match(
    message: dict[str, Any], other_arguments: dict[str, Any]
) -> None:
    other = {**message, "params": {**message["params"], "arguments": other_arguments}}
    assert (_key(other) == _key(message)) == (other_arguments == message["params"]["arguments"])


trace_context = st.dictionaries(st.sampled_from(sorted(TRACE_CONTEXT)), st.text(max_size=55))


def _traced(message: dict[str, Any], context: dict[str, str]) -> dict[str, Any]:
    params = message["params"]
    return {**message, "params": {**params, "_meta": {**params.get("_meta", {}), **context}}}


@given(requests(), trace_context, trace_context)
def test_trace_context_never_decides_a_match(
    message: dict[str, Any], one: dict[str, str], other: dict[str, str]
) -> None:
    assert _key(_traced(message, one)) == _key(_traced(message, other)) == _key(message)


def test_a_traced_request_compares_as_the_untraced_one() -> None:
    untraced = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "a"}}
    traced = _traced(untraced, {"traceparent": "00-e2a2-8b1f-03", "tracestate": "k=v"})
    assert normalised(traced) == normalised(untraced)


def test_leaving_out_trace_context_keeps_the_rest_of_meta() -> None:
    traced = {
        "jsonrpc": "2.0",
        "method": "tools/call",
        "params": {"_meta": {"traceparent": "00-1-2-01", "progressToken": 7, "x": 1}},
    }
    assert normalised(traced) == {
        "jsonrpc": "2.0",
        "method": "tools/call",
        "params": {"_meta": {"progressToken": PLACEHOLDER, "x": 1}},
    }


def test_normalised_keeps_whether_an_id_is_there() -> None:
    request = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    notification = {"jsonrpc": "2.0", "method": "ping"}
    assert normalised(request) == {"jsonrpc": "2.0", "id": PLACEHOLDER, "method": "ping"}
    assert normalised(notification) == notification


def test_normalised_leaves_a_model_request_as_it_is() -> None:
    body = {"model": "gpt-4o", "id": 3}
    assert normalised(body) is body


def test_a_batch_is_normalised_item_by_item() -> None:
    batch: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "x"},
    ]
    assert normalised(batch) == [{**batch[0], "id": PLACEHOLDER}, batch[1]]


def test_the_legacy_sse_session_query_is_ignored_for_mcp_requests_only() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    one = make_key("POST", "http://127.0.0.1/messages/?session_id=a", message, None, ignored=())
    two = make_key("POST", "http://127.0.0.1/messages/?session_id=b", message, None, ignored=())
    assert one == two
    assert "session_id" in VOLATILE.query
    model = {"model": "x"}
    assert make_key(
        "POST", "http://127.0.0.1/v1/?session_id=a", model, None, ignored=()
    ) != make_key("POST", "http://127.0.0.1/v1/?session_id=b", model, None, ignored=())


def test_the_session_header_is_volatile() -> None:
    assert "mcp-session-id" in VOLATILE.headers


def test_with_id_copies() -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert with_id(message, 9) == {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    assert message["id"] == 1


def test_describe_names_a_tool_call_by_its_tool() -> None:
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "get_order"}}
    assert describe(call) == "tools/call get_order"


def test_describe_names_a_request_by_its_method() -> None:
    assert describe({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}) == (
        "initialize"
    )


def test_describe_reads_which_request_a_result_answers() -> None:
    response = {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}
    assert describe(response) == "response to tools/list"
    assert describe(response, {1: "tools/list"}) == "response to tools/list"


def test_describe_gives_an_error_s_code_and_message() -> None:
    error = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": "no such method"}}
    assert describe(error) == "error response (-32601: no such method)"
