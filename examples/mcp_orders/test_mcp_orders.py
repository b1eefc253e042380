"""Tests of the order desk's agents with their MCP tools: recorded once, replayed offline.

``pytest --agent-record examples/mcp_orders`` runs each agent against the loopback provider
(a scripted OpenAI server on 127.0.0.1) and the real order-desk MCP server
(``orders_mcp_server.py``), started over stdio by the MCP client, or over streamable HTTP by
the ``mcp_url`` fixture; the cassette beside this file keeps the model calls and the MCP
messages in the order they were sent. A plain ``pytest`` replays both: no model server, no
MCP server process, no socket.

``agent_context`` rebuilds the run's iteration context: each model call is one iteration,
and each tool the model called carries the MCP exchange that ran it
(``metadata["mcp"]``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import openai
import pytest
from mcp import ClientSession
from mcp.client.stdio import stdio_client
from order_agents import (
    SERVER,
    answer_with_mcp_sdk,
    openai_agents_agent,
    pydantic_ai_agent,
    stdio_server,
)

from pytest_agentctx import (
    Cassette,
    LoopbackProvider,
    RecordMode,
    SnapshotOptions,
    Trajectory,
    matches,
)

CASSETTES = Path(__file__).parent / "cassettes"

#: Every test's agent run stays within this (measured on the captured context).
pytestmark = pytest.mark.agent_budget(max_iterations=3, max_tool_calls=2)

QUESTION = "Where is my order A-1042?"
ANSWER = "Dune shipped with PostNord, which has delays of 2 days in Scandinavia."


@pytest.fixture
def agent_cassette_config() -> dict[str, object]:
    """This example keeps its cassettes beside it, one per test."""
    return {"directory": CASSETTES}


@pytest.fixture
def agent_snapshot_config() -> SnapshotOptions:
    """Snapshots write the values of ``id`` and ``*_id`` fields as ``<id:N>``; here
    ``order_id`` is a tool argument the test cares about, so only ``id`` and
    ``tool_call_id`` count as generated ids."""
    return SnapshotOptions(ids=("id", "tool_call_id"))


@pytest.fixture
def model_server(agent_cassette: Cassette) -> Iterator[LoopbackProvider]:
    """The model while recording: a server on 127.0.0.1 that plays the replies a test
    scripts (a lookup, then the carrier's news, then the answer). On replay the cassette
    answers every request, so the server must see none."""
    with LoopbackProvider() as provider:
        provider.reply_tool_call("get_order", order_id="A-1042").reply_tool_call(
            "shipping_status", carrier="PostNord"
        ).reply(ANSWER)
        yield provider
        if agent_cassette.mode is RecordMode.NONE:
            assert provider.exchanges == []
        else:
            provider.verify()


@pytest.fixture
async def llm(model_server: LoopbackProvider) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=model_server.openai_base_url, api_key="sk-test", max_retries=0
    ) as client:
        yield client


#: The order desk's port over streamable HTTP: fixed, so that the server's name in the
#: context (its URL) stays the same when the test is recorded again.
PORT = 8765


@pytest.fixture
def mcp_url(agent_cassette: Cassette) -> Iterator[str]:
    """The order desk over streamable HTTP. While recording, the real server on
    127.0.0.1:8765; on replay nothing listens there: the cassette answers."""
    port = PORT
    url = f"http://127.0.0.1:{port}/mcp"
    if agent_cassette.mode is RecordMode.NONE:
        yield url
        return
    server = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.05)
        yield url
    finally:
        server.kill()
        server.wait(timeout=30)


def _expected(context: object) -> bool:
    return matches(
        context,
        {
            "iterations": [
                {"tool_calls": [{"name": "get_order", "arguments": {"order_id": "A-1042"}}]},
                {"tool_calls": [{"name": "shipping_status", "arguments": {"carrier": "PostNord"}}]},
                {"tool_calls": []},
            ]
        },
    )


async def test_mcp_sdk_loop_over_stdio(llm, agent_context, agent_snapshot):
    async with stdio_client(stdio_server()) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        answer = await answer_with_mcp_sdk(QUESTION, llm=llm, session=session)

    assert answer == ANSWER
    assert _expected(agent_context.context)
    # each tool call carries the MCP exchange that ran it
    assert matches(
        agent_context.context.iterations[0].metadata["mcp"],
        [
            {
                "server": "orders_mcp_server",
                "transport": "stdio",
                "tool": "get_order",
                "arguments": {"order_id": "A-1042"},
                "is_error": False,
            }
        ],
    )
    assert agent_context.context == agent_snapshot


async def test_pydantic_ai_over_stdio(llm, agent_context):
    from pydantic_ai.mcp import MCPToolset, StdioTransport
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=llm))
    toolset = MCPToolset(StdioTransport(command=sys.executable, args=[str(SERVER)]))
    agent = pydantic_ai_agent(model, toolset)
    async with agent:
        result = await agent.run(QUESTION)

    assert result.output == ANSWER
    assert agent_context.context == Trajectory(
        [("get_order", {"order_id": "A-1042"}), ("shipping_status", {"carrier": "PostNord"})]
    )


# openai-agents 0.24 opens the connection with the mcp SDK's older streamablehttp_client.
@pytest.mark.filterwarnings("ignore:Use `streamable_http_client` instead:DeprecationWarning")
async def test_openai_agents_over_streamable_http(llm, mcp_url, agent_context):
    from agents import OpenAIProvider, RunConfig, Runner
    from agents.mcp import MCPServerStreamableHttp

    run_config = RunConfig(
        model_provider=OpenAIProvider(openai_client=llm, use_responses=False),
        tracing_disabled=True,
    )
    async with MCPServerStreamableHttp(params={"url": mcp_url}, name="orders") as server:
        result = await Runner.run(openai_agents_agent(server), QUESTION, run_config=run_config)

    assert result.final_output == ANSWER
    assert _expected(agent_context.context)
    assert [(call["server"], call["tool"]) for call in agent_context.mcp_calls] == [
        (mcp_url, "get_order"),
        (mcp_url, "shipping_status"),
    ]
