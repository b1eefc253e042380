"""End-to-end: MCP tool calls in the iteration context, budgets and reports.

The inner tests run an agent on the raw ``openai`` SDK whose tool is served by an MCP server
over streamable HTTP, reached with plain JSON-RPC POSTs; both are replayed from a cassette
the outer test writes in the cassettes' representation of MCP traffic (the HTTP
interactions themselves). Nothing leaves the process: the URLs point at
``http://127.0.0.1:9`` (nobody listens there).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

import openai  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest

BASE = "http://127.0.0.1:9"
GET_ORDER = {
    "name": "get_order",
    "description": "Look an order up by its id.",
    "inputSchema": {
        "type": "object",
        "properties": {"order_id": {"type": "integer"}},
        "required": ["order_id"],
    },
}
ORDER = {"order_id": 42, "item": "blue mug", "status": "shipped"}
MODEL_TOOLS = [
    {
        "type": "function",
        "function": {"name": "get_order", "parameters": GET_ORDER["inputSchema"]},
    }
]
QUESTION = [{"role": "user", "content": "Where is order 42?"}]
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_order", "arguments": '{"order_id": 42}'},
}
RESULT = {
    "content": [{"type": "text", "text": json.dumps(ORDER)}],
    "structuredContent": ORDER,
    "isError": False,
}

AGENT = '''
import json

import httpx2
import openai

BASE = "http://127.0.0.1:9"
MCP = BASE + "/mcp"


def rpc(http, id_, method, params=None):
    message = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return http.post(MCP, json=message).json()["result"]


def order_agent(question):
    """An agent on the raw openai SDK whose tools an MCP server serves."""
    client = openai.OpenAI(api_key="sk-test", base_url=BASE + "/v1", max_retries=0)
    with httpx2.Client() as http:
        rpc(http, 0, "initialize", {"protocolVersion": "2025-06-18"})
        listed = rpc(http, 1, "tools/list")["tools"]
        tools = [
            {"type": "function", "function": {"name": t["name"], "parameters": t["inputSchema"]}}
            for t in listed
        ]
        messages = [{"role": "user", "content": question}]
        ids = iter(range(2, 100))
        while True:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=tools
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content
            calls = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.function.name, "arguments": c.function.arguments}}
                for c in message.tool_calls
            ]
            messages.append({"role": "assistant", "tool_calls": calls})
            for call in message.tool_calls:
                arguments = json.loads(call.function.arguments)
                result = rpc(
                    http, next(ids), "tools/call",
                    {"name": call.function.name, "arguments": arguments},
                )
                text = result["content"][0]["text"]
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
'''


def _interaction(url: str, request: object, response: object) -> dict[str, Any]:
    return {
        "request": {
            "method": "POST",
            "url": url,
            "headers": {"content-type": "application/json"},
            "body": {"json": request},
        },
        "response": {
            "status": 200,
            "headers": {"content-type": "application/json"},
            "body": {"json": response},
        },
    }


def _chat(messages: list[dict[str, Any]], reply: dict[str, Any], finish: str) -> dict[str, Any]:
    request = {"messages": messages, "model": "gpt-4o-mini", "tools": MODEL_TOOLS}
    response = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": reply, "finish_reason": finish}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
    }
    return _interaction(f"{BASE}/v1/chat/completions", request, response)


def _rpc(id_: int, method: str, params: object, result: object) -> dict[str, Any]:
    request: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        request["params"] = params
    return _interaction(f"{BASE}/mcp", request, {"jsonrpc": "2.0", "id": id_, "result": result})


CASSETTE = {
    "cassette": "pytest-agentctx",
    "version": 1,
    "interactions": [
        _rpc(0, "initialize", {"protocolVersion": "2025-06-18"}, {"protocolVersion": "2025-06-18"}),
        _rpc(1, "tools/list", None, {"tools": [GET_ORDER]}),
        _chat(QUESTION, {"role": "assistant", "content": None, "tool_calls": [CALL]}, "tool_calls"),
        _rpc(2, "tools/call", {"name": "get_order", "arguments": {"order_id": 42}}, RESULT),
        _chat(
            [
                *QUESTION,
                {"role": "assistant", "tool_calls": [CALL]},
                {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(ORDER)},
            ],
            {"role": "assistant", "content": "Order 42 has shipped."},
            "stop",
        ),
    ],
}


@pytest.fixture
def orders(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makepyfile(order_agent=AGENT)
    for name in ("test_context", "test_budget", "test_snapshot"):
        folder = agent_pytester.path / "cassettes" / "test_orders"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.json").write_text(json.dumps(CASSETTE))
    agent_pytester.makepyfile(
        test_orders="""
        import pytest
        from order_agent import order_agent


        def test_context(agent_context):
            assert order_agent("Where is order 42?") == "Order 42 has shipped."

            first = agent_context.context.iterations[0]
            (mcp,) = first.metadata["mcp"]
            assert mcp["tool_call_id"] == first.tool_calls[0].id == "call_1"
            assert (mcp["server"], mcp["transport"], mcp["tool"]) == (
                "http://127.0.0.1:9/mcp", "http", "get_order"
            )
            assert (mcp["is_error"], mcp["result"]["structuredContent"]["status"]) == (
                False, "shipped"
            )
            names = [t["name"] for t in agent_context.tool_contract["http://127.0.0.1:9/mcp"]]
            assert names == ["get_order"]
            assert agent_context.non_llm_reasons[:2] == [
                "MCP over http (http://127.0.0.1:9/mcp): initialize",
                "MCP over http (http://127.0.0.1:9/mcp): tools/list",
            ]


        @pytest.mark.agent_budget(max_mcp_calls=0)
        def test_budget(agent_context):
            order_agent("Where is order 42?")


        def test_snapshot(agent_context, agent_snapshot):
            order_agent("Where is order 42?")

            assert agent_context.context == agent_snapshot
        """
    )
    return agent_pytester


def test_an_mcp_tool_call_joins_the_model_tool_call_in_the_context(
    orders: pytest.Pytester,
) -> None:
    result = orders.runpytest("-p", "no:cacheprovider", "-k", "test_context")

    result.assert_outcomes(passed=1)


def test_a_budget_on_mcp_calls_fails_with_the_measured_figure(orders: pytest.Pytester) -> None:
    result = orders.runpytest("-p", "no:cacheprovider", "-k", "test_budget")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*agent budget exceeded: max_mcp_calls 1 > 0*",
            "*max_mcp_calls: measured 1, allowed 0 (runs: #1 conversation 1 1)",
        ]
    )


def test_the_reports_carry_the_mcp_calls_and_the_tool_contract(orders: pytest.Pytester) -> None:
    orders.runpytest("-p", "no:cacheprovider", "--agent-report=report.json", "--junitxml=junit.xml")

    report = json.loads((orders.path / "report.json").read_text())
    test = next(t for t in report["tests"] if t["nodeid"].endswith("test_context"))
    assert test["runs"][0]["mcp_calls"] == [
        {
            "server": "http://127.0.0.1:9/mcp",
            "tool": "get_order",
            "iteration": 1,
            "tool_call_id": "call_1",
            "is_error": False,
            "error": None,
        }
    ]
    assert test["mcp_contract"] == {"http://127.0.0.1:9/mcp": [GET_ORDER]}
    assert test["stats"]["mcp_calls"] == 1
    properties = [
        (p.get("name"), p.get("value"))
        for case in ET.parse(orders.path / "junit.xml").iter("testcase")
        if case.get("name") == "test_context"
        for p in case.iter("property")
    ]
    assert ("agentctx.mcp_call", "http://127.0.0.1:9/mcp get_order") in properties
    assert ("agentctx.mcp_contract", "http://127.0.0.1:9/mcp: get_order") in properties


def test_the_context_snapshot_shows_the_mcp_call_the_same_on_every_run(
    orders: pytest.Pytester,
) -> None:
    orders.runpytest("-p", "no:cacheprovider", "-k", "test_snapshot", "--snapshot-update")
    (written,) = (orders.path / "__snapshots__").rglob("*.agentctx")

    again = orders.runpytest("-p", "no:cacheprovider", "-k", "test_snapshot")

    again.assert_outcomes(passed=1)
    text = written.read_text()
    assert "iterations[0].metadata.mcp[0].server = 'http://127.0.0.1:9/mcp'" in text
    assert "iterations[0].metadata.mcp[0].tool_call_id = <id:1>" in text
    assert "iterations[0].metadata.mcp[0].is_error = False" in text
