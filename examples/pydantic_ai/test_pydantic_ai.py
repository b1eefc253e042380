"""Tests of the pydantic-ai support agent: recorded once, replayed offline.

``pytest --agent-record examples/pydantic_ai`` runs the agent against the loopback provider
(a scripted OpenAI server on 127.0.0.1) and writes the cassettes beside this file; a plain
``pytest`` replays them with the network blocked, and the server sees no request.

``agent_context`` rebuilds the run's iteration context from those exchanges: each model
call pydantic-ai made is one iteration, with the tool results its next call sent back.
pydantic-ai's own run ids and timestamps never leave the process, so they are not in it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import openai
import pytest
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai_agent import Shop, support_agent

from pytest_agentctx import (
    Cassette,
    LoopbackProvider,
    RecordMode,
    Regex,
    SnapshotOptions,
    Trajectory,
    matches,
)

CASSETTES = Path(__file__).parent / "cassettes"

#: Every test's agent run stays within this (measured on the captured context).
pytestmark = pytest.mark.agent_budget(max_iterations=3, max_tool_calls=2, max_tokens=600)


@pytest.fixture
def agent_cassette_config() -> dict[str, object]:
    """This example keeps its cassettes beside it, one per test (the default is
    ``cassettes/`` at the rootdir)."""
    return {"directory": CASSETTES}


@pytest.fixture
def agent_snapshot_config() -> SnapshotOptions:
    """Snapshots write the values of ``id`` and ``*_id`` fields as ``<id:N>``; here
    ``order_id`` is a tool argument the test cares about, so only ``id`` and
    ``tool_call_id`` count as generated ids."""
    return SnapshotOptions(ids=("id", "tool_call_id"))


@pytest.fixture
def model_server(agent_cassette: Cassette) -> Iterator[LoopbackProvider]:
    """The model while recording: a server on 127.0.0.1 that plays the replies a test scripts.

    On replay the cassette answers every request, so the server must see none.
    """
    with LoopbackProvider() as provider:
        yield provider
        if agent_cassette.mode is RecordMode.NONE:
            assert provider.exchanges == []
        else:
            provider.verify()


@pytest.fixture
async def agent(model_server: LoopbackProvider) -> AsyncIterator[Agent[Shop, str]]:
    """The support agent with its model pointed at the model server (pydantic-ai's own
    ``Agent.override``), through an SDK client the test closes."""
    async with openai.AsyncOpenAI(
        base_url=model_server.openai_base_url, api_key="sk-test", max_retries=0
    ) as client:
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
        with support_agent.override(model=model):
            yield support_agent


async def test_explains_a_delayed_order(model_server, agent, agent_context):
    model_server.reply_tool_call("lookup_order", order_id="A-1042").reply_tool_call(
        "shipping_status", carrier="PostNord"
    ).reply("Dune has shipped with PostNord, which has 2-day delays in Scandinavia.")

    result = await agent.run("Where is my order A-1042?", deps=Shop())

    assert matches(
        agent_context.context,
        {
            "iterations": [
                {
                    "messages": [
                        {"role": "system", "content": Regex("support assistant")},
                        {"role": "user", "content": "Where is my order A-1042?"},
                        {"role": "assistant", "tool_calls": [{"name": "lookup_order"}]},
                        {"role": "tool", "content": "Dune: shipped, carrier PostNord"},
                    ]
                },
                {
                    "messages": [
                        {"role": "assistant"},
                        {"role": "tool", "content": Regex("^delays of 2 days")},
                    ]
                },
                {"tool_calls": []},
            ],
            "final_output": result.output,
        },
    )
    assert agent_context.non_llm == []  # no request but the model calls


async def test_looks_the_order_up_before_the_carrier(model_server, agent, agent_context):
    model_server.reply_tool_call("lookup_order", order_id="A-1043").reply_tool_call(
        "shipping_status", carrier="DHL"
    ).reply("Emma is being packed; DHL is on time.")

    await agent.run("Is order A-1043 late?", deps=Shop())

    assert agent_context.context == Trajectory(
        [("lookup_order", {"order_id": "A-1043"}), ("shipping_status", {"carrier": "DHL"})]
    )


async def test_unknown_order_run_matches_its_snapshot(
    model_server, agent, agent_context, agent_snapshot
):
    model_server.reply_tool_call("lookup_order", order_id="B-7").reply(
        "I cannot find order B-7: could you check the number?"
    )

    await agent.run("What about my order B-7?", deps=Shop())

    assert agent_context.context == agent_snapshot
