"""Unit tests of the fake MCP server's answers at the message level (doubles.fake_mcp:
FakeMcp.answer), its script and what it records."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, strategies as st

from pytest_agentctx.doubles.errors import UnscriptedMcpRequest
from pytest_agentctx.doubles.fake_mcp import FakeMcp, JsonRpcError
from pytest_agentctx.doubles.fake_mcp.script import tool_result
from pytest_agentctx.doubles.freeze import FrozenClock


def request(method: str, params: dict[str, Any] | None = None, id: int = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


async def result_of(fake: FakeMcp, method: str, params: dict[str, Any] | None = None) -> Any:
    [reply] = await fake.answer(request(method, params))
    assert "error" not in reply, reply
    return reply["result"]


async def error_of(fake: FakeMcp, method: str, params: dict[str, Any] | None = None) -> Any:
    [reply] = await fake.answer(request(method, params))
    assert "result" not in reply, reply
    return reply["error"]


async def call(fake: FakeMcp, name: str, **arguments: object) -> Any:
    return await result_of(fake, "tools/call", {"name": name, "arguments": arguments})


async def test_initialize_gives_capabilities_and_server_info() -> None:
    fake = FakeMcp("orders", version="2.1")
    result = await result_of(fake, "initialize", {"protocolVersion": "2025-06-18"})
    assert result["serverInfo"] == {"name": "orders", "version": "2.1"}
    assert set(result["capabilities"]) == {"tools", "resources", "prompts"}
    assert result["protocolVersion"] == "2025-06-18"


async def test_initialize_with_an_unknown_version_gets_the_newest() -> None:
    result = await result_of(FakeMcp(), "initialize", {"protocolVersion": "1999-01-01"})
    assert result["protocolVersion"] == "2025-11-25"


async def test_a_notification_gets_no_answer() -> None:
    fake = FakeMcp()
    assert await fake.answer({"jsonrpc": "2.0", "method": "notifications/initialized"}) == []
    assert fake.methods == ["notifications/initialized"]


async def test_ping_answers_an_empty_result() -> None:
    assert await result_of(FakeMcp(), "ping") == {}


async def test_the_reply_keeps_the_request_id() -> None:
    [reply] = await FakeMcp().answer(request("ping", id=17))
    assert reply["id"] == 17


async def test_an_unknown_method_gets_method_not_found() -> None:
    error = await error_of(FakeMcp(), "completion/complete")
    assert error["code"] == -32601
    assert "completion/complete" in error["message"]


async def test_an_unknown_method_fails_verify() -> None:
    fake = FakeMcp()
    await fake.answer(request("sampling/unknown"))
    with pytest.raises(UnscriptedMcpRequest, match="method sampling/unknown"):
        fake.verify()


async def test_tools_list_gives_the_scripted_schema_from_properties() -> None:
    fake = FakeMcp().tool("get_order", "ok", schema={"order_id": {"type": "integer"}})
    [tool] = (await result_of(fake, "tools/list"))["tools"]
    assert tool == {
        "name": "get_order",
        "inputSchema": {
            "type": "object",
            "properties": {"order_id": {"type": "integer"}},
            "required": ["order_id"],
        },
    }


async def test_a_whole_schema_is_kept_as_given() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    fake = FakeMcp().tool("search", "ok", schema=schema)
    [tool] = (await result_of(fake, "tools/list"))["tools"]
    assert tool["inputSchema"] == schema


async def test_a_function_gives_the_schema_and_description() -> None:
    fake = FakeMcp()

    @fake.tool
    def get_order(order_id: int, verbose: bool = False) -> str:
        """Look an order up."""
        return f"order {order_id}"

    [tool] = (await result_of(fake, "tools/list"))["tools"]
    assert tool["description"] == "Look an order up."
    assert tool["inputSchema"]["required"] == ["order_id"]
    assert tool["inputSchema"]["properties"]["order_id"] == {"type": "integer"}
    assert tool["inputSchema"]["properties"]["verbose"] == {"default": False, "type": "boolean"}


async def test_a_function_answers_with_the_call_arguments() -> None:
    fake = FakeMcp()

    @fake.tool(description="Orders.")
    async def get_order(order_id: int) -> str:
        return f"order {order_id} shipped"

    result = await call(fake, "get_order", order_id=42)
    assert result == {"content": [{"type": "text", "text": "order 42 shipped"}], "isError": False}


async def test_a_text_result() -> None:
    fake = FakeMcp().tool("get_order", "shipped")
    assert (await call(fake, "get_order"))["content"] == [{"type": "text", "text": "shipped"}]


async def test_a_dict_result_is_structured_content_and_its_text() -> None:
    fake = FakeMcp().tool("get_order", {"id": 42, "status": "shipped"})
    result = await call(fake, "get_order")
    assert result["structuredContent"] == {"id": 42, "status": "shipped"}
    assert json.loads(result["content"][0]["text"]) == {"id": 42, "status": "shipped"}


async def test_a_whole_result_is_answered_as_given() -> None:
    whole = {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]}
    fake = FakeMcp().tool("snap", whole)
    assert await call(fake, "snap") == {**whole, "isError": False}


async def test_is_error_marks_the_result() -> None:
    fake = FakeMcp().tool("cancel_order", "already shipped", is_error=True)
    result = await call(fake, "cancel_order")
    assert result == {
        "content": [{"type": "text", "text": "already shipped"}],
        "isError": True,
    }


async def test_a_raised_exception_becomes_an_error_result() -> None:
    fake = FakeMcp().tool("get_order", raises=TimeoutError("db down"))
    result = await call(fake, "get_order")
    assert result["isError"] is True
    assert result["content"][0]["text"] == "Error executing tool get_order: db down"


async def test_an_exception_of_the_function_becomes_an_error_result() -> None:
    fake = FakeMcp()

    @fake.tool
    def get_order(order_id: int) -> str:
        raise KeyError(order_id)

    assert (await call(fake, "get_order", order_id=7))["isError"] is True


async def test_error_answers_with_a_json_rpc_error() -> None:
    fake = FakeMcp().tool("get_order", error=JsonRpcError(-32000, "rate limited", {"retry": 2}))
    error = await error_of(fake, "tools/call", {"name": "get_order", "arguments": {}})
    assert error == {"code": -32000, "message": "rate limited", "data": {"retry": 2}}


async def test_an_error_message_is_an_internal_error() -> None:
    fake = FakeMcp().tool("get_order", error="boom")
    error = await error_of(fake, "tools/call", {"name": "get_order", "arguments": {}})
    assert error == {"code": -32603, "message": "boom"}


async def test_a_function_raising_json_rpc_error_answers_with_it() -> None:
    fake = FakeMcp()

    @fake.tool
    def get_order(order_id: int) -> str:
        raise JsonRpcError(-32602, f"no order {order_id}")

    error = await error_of(fake, "tools/call", {"name": "get_order", "arguments": {"order_id": 9}})
    assert error["message"] == "no order 9"


async def test_an_unknown_tool_names_the_known_tools() -> None:
    fake = FakeMcp().tool("get_order", "ok").tool("cancel_order", "ok")
    error = await error_of(fake, "tools/call", {"name": "refund", "arguments": {}})
    assert error["code"] == -32602
    assert "refund" in error["message"]
    assert "cancel_order, get_order" in error["message"]


async def test_an_unknown_tool_fails_verify() -> None:
    fake = FakeMcp().tool("get_order", "ok")
    await fake.answer(request("tools/call", {"name": "refund", "arguments": {}}))
    with pytest.raises(UnscriptedMcpRequest, match="tools/call refund"):
        fake.verify()


async def test_verify_passes_when_every_request_was_scripted() -> None:
    fake = FakeMcp().tool("get_order", "ok")
    await call(fake, "get_order")
    fake.verify()


def test_a_tool_with_nothing_to_answer_is_refused() -> None:
    with pytest.raises(TypeError, match="needs what the tool answers"):
        FakeMcp().tool("get_order")


def test_a_tool_with_two_answers_is_refused() -> None:
    with pytest.raises(TypeError, match="a result and raises="):
        FakeMcp().tool("get_order", "ok", raises=ValueError("x"))


async def test_calls_are_recorded_in_order_with_their_answers() -> None:
    fake = FakeMcp().tool("get_order", "ok").tool("cancel_order", "no", is_error=True)
    await call(fake, "get_order", order_id=1)
    await call(fake, "cancel_order", order_id=1)
    assert [(c.name, c.arguments, c.is_error) for c in fake.calls] == [
        ("get_order", {"order_id": 1}, False),
        ("cancel_order", {"order_id": 1}, True),
    ]


async def test_called_matches_the_named_arguments() -> None:
    fake = FakeMcp().tool("get_order", "ok")
    await call(fake, "get_order", order_id=42, verbose=True)
    assert fake.called("get_order")
    assert fake.called("get_order", order_id=42)
    assert not fake.called("get_order", order_id=43)
    assert not fake.called("cancel_order")


async def test_a_delay_moves_the_frozen_clock_on() -> None:
    fake = FakeMcp().tool("slow", "done", delay=30)
    with FrozenClock("2026-01-01T00:00:00Z") as clock:
        await call(fake, "slow")
        assert clock.now() == datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC)


async def test_a_delay_moves_the_given_clock_on() -> None:
    with FrozenClock("2026-01-01T00:00:00Z") as clock:
        fake = FakeMcp(clock=clock).tool("slow", "done", delay=2.5)
        await call(fake, "slow")
        assert clock.now() == datetime(2026, 1, 1, 0, 0, 2, 500000, tzinfo=UTC)


async def test_a_delay_does_not_sleep_in_real_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import anyio

    def no_sleep(seconds: float) -> None:
        raise AssertionError(f"slept {seconds}s")

    monkeypatch.setattr(anyio, "sleep", no_sleep)
    fake = FakeMcp().tool("slow", "done", delay=3600)
    assert (await call(fake, "slow"))["isError"] is False


async def test_real_time_sleeps_the_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    import anyio

    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    monkeypatch.setattr(anyio, "sleep", sleep)
    fake = FakeMcp().tool("slow", "done", delay=0.25, real_time=True)
    await call(fake, "slow")
    assert slept == [0.25]


async def test_resources_are_listed_and_read() -> None:
    fake = FakeMcp().resource("orders://42", "order 42: shipped", description="Order 42")
    [listed] = (await result_of(fake, "resources/list"))["resources"]
    assert listed == {
        "uri": "orders://42",
        "name": "42",
        "mimeType": "text/plain",
        "description": "Order 42",
    }
    read = await result_of(fake, "resources/read", {"uri": "orders://42"})
    assert read["contents"] == [
        {"uri": "orders://42", "mimeType": "text/plain", "text": "order 42: shipped"}
    ]


async def test_an_unknown_resource_names_the_known_ones() -> None:
    fake = FakeMcp().resource("orders://42", "x")
    error = await error_of(fake, "resources/read", {"uri": "orders://43"})
    assert error["code"] == -32002
    assert "orders://42" in error["message"]


async def test_a_prompt_fills_in_its_arguments() -> None:
    fake = FakeMcp().prompt(
        "summary", [("user", "Summarise order {order_id}.")], arguments=["order_id"]
    )
    [listed] = (await result_of(fake, "prompts/list"))["prompts"]
    assert listed == {"name": "summary", "arguments": [{"name": "order_id", "required": True}]}
    got = await result_of(fake, "prompts/get", {"name": "summary", "arguments": {"order_id": "42"}})
    assert got["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Summarise order 42."}}
    ]


async def test_a_prompt_without_a_required_argument_is_an_error() -> None:
    fake = FakeMcp().prompt("summary", "Summarise.", arguments=["order_id"])
    error = await error_of(fake, "prompts/get", {"name": "summary"})
    assert "order_id" in error["message"]


async def test_a_prompt_function_gets_the_arguments() -> None:
    fake = FakeMcp().prompt("greet", lambda name: f"Hello {name}", arguments=["name"])
    got = await result_of(fake, "prompts/get", {"name": "greet", "arguments": {"name": "Ada"}})
    assert got["messages"][0]["content"]["text"] == "Hello Ada"


async def test_answer_keeps_a_stdio_exchange() -> None:
    fake = FakeMcp("orders").tool("get_order", "ok")
    message = request("tools/call", {"name": "get_order", "arguments": {}})
    replies = await fake.answer(message)
    [exchange] = fake.exchanges
    assert (exchange.method, exchange.url) == ("POST", "mcp+stdio://fake-mcp-orders/")
    assert exchange.request == {"json": message}
    assert exchange.response == {"text": json.dumps(replies[0]) + "\n"}


async def test_the_log_gets_every_exchange() -> None:
    logged: list[object] = []
    fake = FakeMcp(log=logged.append)
    await fake.answer(request("ping"))
    assert logged == fake.exchanges


async def test_a_batch_gets_one_reply_per_request() -> None:
    replies = await FakeMcp().answer(
        [request("ping", id=1), {"jsonrpc": "2.0", "method": "x"}, request("ping", id=2)]  # type: ignore[arg-type]
    )
    assert [reply["id"] for reply in replies] == [1, 2]


async def test_not_json_rpc_is_an_invalid_request() -> None:
    [reply] = await FakeMcp().answer({"id": 1, "method": "ping"})
    assert reply["error"]["code"] == -32600


def test_the_stdio_command_is_named_after_the_fake() -> None:
    assert FakeMcp().stdio_command == "fake-mcp"
    assert FakeMcp("orders").stdio_command == "fake-mcp-orders"


def _json_containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(children, max_size=3) | st.dictionaries(
        st.text(max_size=5), children, max_size=3
    )


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10), _json_containers, max_leaves=8
)


@given(st.dictionaries(st.text(max_size=5), JSON, max_size=4).filter(lambda d: "content" not in d))
def test_a_json_object_result_is_its_structured_content_and_its_text(value: dict[str, Any]) -> None:
    result = tool_result(value)
    assert result["structuredContent"] == value
    assert json.loads(result["content"][0]["text"]) == value


@given(st.one_of(st.integers(), st.text(max_size=8)))
async def test_every_reply_keeps_its_requests_id(request_id: object) -> None:
    [reply] = await FakeMcp().answer({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
    assert reply["id"] == request_id
