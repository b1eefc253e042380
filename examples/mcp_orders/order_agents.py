"""One order-support agent, written three ways, each taking its tools from the order desk's
MCP server (``orders_mcp_server.py``):

* :func:`answer_with_mcp_sdk`: a hand-written loop on the ``openai`` SDK and the official
  ``mcp`` client (``ClientSession``), the server's tools offered to the model as functions;
* :func:`pydantic_ai_agent`: pydantic-ai, the server as an ``MCPToolset``;
* :func:`openai_agents_agent`: openai-agents, the server as an ``MCPServer``.

Nothing here knows about tests: the tests pass the model client and the server's
connection.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import openai
from mcp import ClientSession, StdioServerParameters

INSTRUCTIONS = (
    "You are the support assistant of a small bookshop. Look orders up with get_order and "
    "explain delays with shipping_status. Be brief and friendly."
)
SERVER = Path(__file__).with_name("orders_mcp_server.py")


def stdio_server() -> StdioServerParameters:
    """How to start the order desk's server over stdio: this Python, the server's file."""
    return StdioServerParameters(command=sys.executable, args=[str(SERVER)])


async def answer_with_mcp_sdk(
    question: str, *, llm: openai.AsyncOpenAI, session: ClientSession, model: str = "gpt-4o-mini"
) -> str:
    """Answer ``question`` with the server's tools: ask the model, run the tools it calls
    on the server, feed their results back, until it answers in text."""
    listed = await session.list_tools()
    tools: list[Any] = [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description or "",
                "parameters": tool.inputSchema,
            },
        }
        for tool in listed.tools
    ]
    messages: list[Any] = [
        {"role": "system", "content": INSTRUCTIONS},
        {"role": "user", "content": question},
    ]
    for _ in range(5):
        reply = await llm.chat.completions.create(model=model, messages=messages, tools=tools)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = await session.call_tool(
                call.function.name, json.loads(call.function.arguments or "{}")
            )
            text = "".join(block.text for block in result.content if block.type == "text")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    raise RuntimeError("the model kept calling tools after 5 turns")


def pydantic_ai_agent(model: Any, toolset: Any) -> Any:
    """The agent on pydantic-ai: ``model`` any pydantic-ai model, ``toolset`` an
    ``MCPToolset`` of the order desk's server."""
    from pydantic_ai import Agent

    return Agent(model, instructions=INSTRUCTIONS, toolsets=[toolset])


def openai_agents_agent(server: Any) -> Any:
    """The agent on openai-agents: ``server`` an ``MCPServer`` of the order desk's server
    (its model comes from the run's ``RunConfig``)."""
    from agents import Agent

    return Agent(
        name="order desk", instructions=INSTRUCTIONS, model="gpt-4o-mini", mcp_servers=[server]
    )
