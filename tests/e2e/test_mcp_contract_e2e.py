"""End-to-end: a tool contract that changed under replayed model calls.

The inner test's agent offers its model the tools an MCP server lists (``fake_mcp`` here,
which is never recorded: a server that is reached live while the model calls replay), asks
once and runs the tool the model calls. Recorded against the loopback provider, then
replayed after the server renamed the tool's argument: the replayed model call no longer
matches, and the miss says which tool and which schema field changed, not only which
JSON path of the request.
"""

from __future__ import annotations

import pytest

AGENT_TEST = """
import json
import os

import openai
import pytest

from pytest_agentctx import Cassette, LoopbackProvider, RecordMode


@pytest.fixture
def model(agent_cassette):
    with LoopbackProvider() as provider:
        provider.reply_tool_call("get_order", order_id=42).reply("Order 42 has shipped.")
        yield provider


async def test_order_lookup(model, fake_mcp):
    argument = os.environ.get("ORDER_ARGUMENT", "order_id")
    fake_mcp.tool(
        "get_order", "shipped", schema={argument: {"type": "integer"}},
        description="An order by id.",
    )
    async with fake_mcp.session() as session, openai.AsyncOpenAI(
        base_url=model.openai_base_url, api_key="sk-test", max_retries=0
    ) as llm:
        listed = await session.list_tools()
        tools = [
            {"type": "function", "function": {
                "name": t.name, "description": t.description, "parameters": t.inputSchema,
            }}
            for t in listed.tools
        ]
        messages = [{"role": "user", "content": "Where is order 42?"}]
        reply = await llm.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=tools
        )
        call = reply.choices[0].message.tool_calls[0]
        result = await session.call_tool(call.function.name, {"order_id": 42})
        messages += [
            reply.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": result.content[0].text},
        ]
        await llm.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
"""


@pytest.fixture
def recorded(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makepyfile(test_orders=AGENT_TEST)
    agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-record").assert_outcomes(passed=1)
    return agent_pytester


def test_the_recording_replays_while_the_tools_are_the_same(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(passed=1)


def test_a_renamed_tool_argument_is_named_in_the_miss(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORDER_ARGUMENT", "order_ref")

    result = recorded.runpytest("-p", "no:cacheprovider")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the tools the model call offers differ from the recorded request*",
            "*tool get_order: *order_id removed*order_ref added*",
        ]
    )
