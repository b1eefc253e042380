"""End-to-end tests of the ``fake_mcp`` fixture (doubles.fake_mcp and its plugin fixture):
a scripted MCP server answering the real mcp SDK's client over the in-memory streams and
streamable HTTP, with nothing spawned and no socket opened, in inner pytest runs; its
exchanges in the test's context; a request it has no script for failing the test."""

from __future__ import annotations

import pytest

QUIET = ("-p", "no:cacheprovider")

RAW = '''
import socket

import pytest
import anyio
from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


@pytest.fixture(autouse=True)
def no_sockets_nor_processes(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a socket was opened or a process started")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(anyio, "open_process", refuse)


@pytest.fixture
def orders(fake_mcp):
    @fake_mcp.tool
    def get_order(order_id: int) -> dict:
        """An order by id."""
        return {"id": order_id, "status": "shipped"}

    fake_mcp.tool("cancel_order", "order 42 has shipped", is_error=True)
    return fake_mcp


async def test_in_memory(orders):
    async with orders.session() as session:
        result = await session.call_tool("get_order", {"order_id": 42})
        refused = await session.call_tool("cancel_order", {"order_id": 42})
    assert result.structuredContent == {"id": 42, "status": "shipped"}
    assert refused.isError
    assert orders.called("get_order", order_id=42)


async def test_streamable_http(orders):
    async with streamable_http_client(orders.url) as (read, write, _), ClientSession(
        read, write
    ) as session:
        await session.initialize()
        tools = await session.list_tools()
        result = await session.call_tool("get_order", {"order_id": 7})
    assert [tool.name for tool in tools.tools] == ["get_order", "cancel_order"]
    assert result.structuredContent == {"id": 7, "status": "shipped"}
    assert [call.name for call in orders.calls] == ["get_order"]


async def test_stdio(orders):
    async with stdio_client(orders.stdio_parameters()) as (read, write), ClientSession(
        read, write
    ) as session:
        await session.initialize()
        result = await session.call_tool("cancel_order", {"order_id": 42})
    assert result.isError
    assert result.content[0].text == "order 42 has shipped"


async def test_a_slow_tool_moves_the_frozen_clock(fake_mcp, frozen_clock):
    fake_mcp.tool("export_orders", "done", delay=90)
    before = frozen_clock.now()
    async with fake_mcp.session() as session:
        await session.call_tool("export_orders", {})
    assert (frozen_clock.now() - before).total_seconds() == 90
'''


def test_fake_mcp_answers_the_sdk_in_memory_over_http_and_stdio(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(test_raw_mcp=RAW)

    agent_pytester.runpytest(*QUIET).assert_outcomes(passed=4)


UNSCRIPTED = """
import pytest
from mcp.shared.exceptions import McpError


async def test_agent_swallows_the_error(fake_mcp):
    fake_mcp.tool("get_order", "shipped")
    async with fake_mcp.session() as session:
        with pytest.raises(McpError):
            await session.call_tool("refund_order", {"order_id": 42})
"""


def test_a_call_to_an_unscripted_tool_fails_the_test(agent_pytester: pytest.Pytester) -> None:
    agent_pytester.makepyfile(test_unscripted_mcp=UNSCRIPTED)

    result = agent_pytester.runpytest(*QUIET)

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*UnscriptedMcpRequest*tools/call refund_order*"])


CONTEXT = """
from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from openai import AsyncOpenAI

from pytest_agentctx import Trajectory


async def ask(client):
    return await client.chat.completions.create(
        model="gpt-4o-mini", messages=[{{"role": "user", "content": "Order 42?"}}]
    )


async def test_{name}(fake_llm, fake_mcp, agent_context):
    fake_mcp.tool("get_order", "shipped")
    fake_llm.reply("Let me look.").reply("Order 42 has shipped.")
    async with AsyncOpenAI() as client:
        await ask(client)
        {open_session}
            await session.initialize()
            await session.call_tool("get_order", {{"order_id": 42}})
        await ask(client)
    mcp = [e for e in agent_context.non_llm if e.request_json() and "method" in e.request_json()]
    methods = [e.request_json()["method"] for e in mcp]
    # the SDK lists the tools after a call, for their output schemas
    assert methods == ["initialize", "notifications/initialized", "tools/call", "tools/list"]
    assert mcp[-1].url == {url}
    assert len(agent_context.contexts) == 2
"""


@pytest.mark.parametrize(
    ("name", "open_session", "url"),
    [
        (
            "memory",
            "async with fake_mcp.session(initialize=False) as session:",
            '"mcp+stdio://fake-mcp/"',
        ),
        (
            "http",
            "async with streamable_http_client(fake_mcp.url) as (read, write, _), "
            "ClientSession(read, write) as session:",
            "fake_mcp.url",
        ),
        (
            "stdio",
            "async with stdio_client(fake_mcp.stdio_parameters()) as (read, write), "
            "ClientSession(read, write) as session:",
            '"mcp+stdio://fake-mcp/"',
        ),
    ],
)
def test_fake_mcp_exchanges_are_in_the_tests_traffic(
    agent_pytester: pytest.Pytester, name: str, open_session: str, url: str
) -> None:
    agent_pytester.makepyfile(
        test_context_mcp=CONTEXT.format(name=name, open_session=open_session, url=url)
    )

    agent_pytester.runpytest(*QUIET).assert_outcomes(passed=1)


PYDANTIC_AI = """
import pytest
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset


@pytest.fixture(params=["http", "stdio"])
def toolset(request, fake_mcp):
    if request.param == "http":
        return MCPToolset(fake_mcp.url)
    return MCPToolset(StdioTransport(fake_mcp.stdio_command, []))


async def test_pydantic_ai_calls_a_fake_mcp_tool(fake_llm, fake_mcp, toolset):
    fake_mcp.tool("get_order", "order 42: shipped", schema={"order_id": {"type": "integer"}})
    fake_llm.reply_tool_call("get_order", order_id=42).reply("Order 42 has shipped.")
    agent = Agent("openai:gpt-4o-mini", toolsets=[toolset])

    async with agent:
        result = await agent.run("Where is order 42?")

    assert result.output == "Order 42 has shipped."
    assert fake_mcp.called("get_order", order_id=42)
    assert fake_llm.requests[1].messages[-1]["content"] == "order 42: shipped"
"""


def test_pydantic_ai_calls_a_fake_mcp_tool_over_http_and_stdio(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(test_pydantic_ai_mcp=PYDANTIC_AI)

    agent_pytester.runpytest(*QUIET).assert_outcomes(passed=2)


OPENAI_AGENTS = """
import pytest
from agents import Agent, RunConfig, Runner
from agents.mcp import MCPServerStdio, MCPServerStreamableHttp


@pytest.fixture(params=["http", "stdio"])
def server(request, fake_mcp):
    if request.param == "http":
        return MCPServerStreamableHttp({"url": fake_mcp.url})
    return MCPServerStdio({"command": fake_mcp.stdio_command, "args": []})


# openai-agents 0.24 calls the mcp SDK's deprecated streamablehttp_client
@pytest.mark.filterwarnings("ignore:Use `streamable_http_client` instead:DeprecationWarning")
async def test_openai_agents_calls_a_fake_mcp_tool(fake_llm, fake_mcp, server):
    fake_mcp.tool("get_order", "order 42: shipped", schema={"order_id": {"type": "integer"}})
    fake_llm.reply_tool_call("get_order", order_id=42).reply("Order 42 has shipped.")

    async with server:
        agent = Agent(name="orders", model="gpt-4o-mini", mcp_servers=[server])
        config = RunConfig(tracing_disabled=True)
        result = await Runner.run(agent, "Where is order 42?", run_config=config)

    assert result.final_output == "Order 42 has shipped."
    assert fake_mcp.called("get_order", order_id=42)
"""


def test_openai_agents_calls_a_fake_mcp_tool_over_http_and_stdio(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(test_openai_agents_mcp=OPENAI_AGENTS)

    agent_pytester.runpytest(*QUIET).assert_outcomes(passed=2)


WITH_A_CASSETTE = """
from mcp import ClientSession
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


async def test_every_transport(fake_mcp, agent_context):
    fake_mcp.tool("get_order", "shipped")
    async with fake_mcp.session() as session:
        await session.call_tool("get_order", {"order_id": 1})
    async with streamable_http_client(fake_mcp.url) as (read, write, _), ClientSession(
        read, write
    ) as session:
        await session.initialize()
        await session.call_tool("get_order", {"order_id": 2})
    async with stdio_client(fake_mcp.stdio_parameters()) as (read, write), ClientSession(
        read, write
    ) as session:
        await session.initialize()
        await session.call_tool("get_order", {"order_id": 3})

    calls = [
        e.request_json()["params"]["arguments"]["order_id"]
        for e in agent_context.non_llm
        if (e.request_json() or {}).get("method") == "tools/call"
    ]
    assert calls == [1, 2, 3]
"""


def test_fake_mcp_shows_in_a_cassettes_exchange_log_and_is_never_recorded(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(test_cassette_mcp=WITH_A_CASSETTE)

    agent_pytester.runpytest(*QUIET, "--agent-record").assert_outcomes(passed=1)

    written = [p.read_text() for p in agent_pytester.path.rglob("cassettes/**/*") if p.is_file()]
    assert not any("fake-mcp" in text for text in written)


WITH_FAKE_LLM = """
async def test_its_exchanges_join_the_fake_models(fake_llm, fake_mcp):
    fake_mcp.tool("get_order", "shipped")
    async with fake_mcp.session() as session:
        await session.call_tool("get_order", {})
    assert [e.url for e in fake_llm.exchanges] == [fake_mcp.stdio_url] * 4
"""


def test_with_fake_llm_its_exchanges_are_in_the_fake_models_log(
    agent_pytester: pytest.Pytester,
) -> None:
    agent_pytester.makepyfile(test_fake_llm_mcp=WITH_FAKE_LLM)

    agent_pytester.runpytest(*QUIET).assert_outcomes(passed=1)
