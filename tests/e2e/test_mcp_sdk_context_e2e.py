"""End-to-end: the context of an agent on the raw ``openai`` SDK whose tools a real MCP
server serves, reached with the real ``mcp`` SDK (``ClientSession`` over ``stdio_client``):
tests/support/mcp_orders_server.py, started as a child process with this interpreter. The
model is ``fake_llm``; the MCP traffic is the server's own, seen by ``agent_context``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_orders_server.py"

CASE = """
import json
import os

import openai
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def params():
    return StdioServerParameters(
        command=os.environ["ORDERS_COMMAND"], args=[os.environ["ORDERS_SERVER"], "stdio"]
    )


async def order_agent(question):
    client = openai.AsyncOpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_retries=0)
    async with stdio_client(params()) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            tools = [
                {"type": "function",
                 "function": {"name": "orders_" + t.name, "parameters": t.inputSchema}}
                for t in listed.tools
            ]
            messages = [{"role": "user", "content": question}]
            while True:
                reply = await client.chat.completions.create(
                    model="gpt-4o-mini", messages=messages, tools=tools
                )
                message = reply.choices[0].message
                messages.append(message.model_dump(exclude_none=True))
                if not message.tool_calls:
                    return message.content
                for call in message.tool_calls:
                    result = await session.call_tool(
                        call.function.name.removeprefix("orders_"),
                        json.loads(call.function.arguments),
                    )
                    messages.append(
                        {"role": "tool", "tool_call_id": call.id,
                         "content": result.content[0].text}
                    )


async def test_orders(fake_llm, agent_context):
    fake_llm.reply_tool_call("orders_get_order", order_id=42)
    fake_llm.reply_tool_call("orders_cancel_order", order_id=7)
    fake_llm.reply("Order 42 has shipped; order 7 does not exist.")

    await order_agent("Where is order 42? Cancel order 7.")

    first, second, _ = agent_context.context.iterations
    (got,) = first.metadata["mcp"]
    assert got["tool_call_id"] == first.tool_calls[0].id
    assert (got["transport"], got["tool"], got["is_error"]) == ("stdio", "get_order", False)
    assert got["result"]["structuredContent"]["status"] == "shipped"
    (cancelled,) = second.metadata["mcp"]
    assert cancelled["tool_call_id"] == second.tool_calls[0].id
    assert cancelled["is_error"] is True
    server = got["server"]
    assert server == "mcp_orders_server"
    assert [t["name"] for t in agent_context.tool_contract[server]] == [
        "get_order", "cancel_order", "summarise_order", "slow_count"
    ]
    assert [call["tool"] for call in agent_context.mcp_calls] == ["get_order", "cancel_order"]
"""


def test_a_real_sdk_and_server_give_mcp_calls_joined_to_the_model_calls(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORDERS_COMMAND", sys.executable)
    monkeypatch.setenv("ORDERS_SERVER", str(SERVER))
    agent_pytester.makepyfile(test_orders=CASE)

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)


PYDANTIC_AI_CASE = """
import os

from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


async def test_orders(fake_llm, agent_context):
    fake_llm.reply_tool_call("orders_get_order", order_id=42).reply("Order 42 has shipped.")
    model = OpenAIChatModel(
        "gpt-4o-mini",
        provider=OpenAIProvider(base_url="http://127.0.0.1:9/v1", api_key="sk-test"),
    )
    toolset = MCPToolset(os.environ["ORDERS_SERVER"]).prefixed("orders")
    agent = Agent(model, toolsets=[toolset])

    async with agent:
        result = await agent.run("Where is order 42?")

    assert result.output == "Order 42 has shipped."
    first = agent_context.context.iterations[0]
    (got,) = first.metadata["mcp"]
    assert (first.tool_calls[0].name, got["tool"]) == ("orders_get_order", "get_order")
    assert got["tool_call_id"] == first.tool_calls[0].id
"""


def test_pydantic_ais_prefixed_mcp_tool_joins_the_model_tool_call(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORDERS_SERVER", str(SERVER))
    agent_pytester.makepyfile(test_orders=PYDANTIC_AI_CASE)

    result = agent_pytester.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)
