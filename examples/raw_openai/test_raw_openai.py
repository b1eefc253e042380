"""Tests of the raw-openai weather agent: recorded once, replayed offline.

``pytest --agent-record examples/raw_openai`` runs the agent against the loopback provider
(a scripted OpenAI server on 127.0.0.1) and writes the cassettes beside this file; a plain
``pytest`` replays them with the network blocked, and the server sees no request.

``agent_context`` rebuilds the run's iteration context from those exchanges: each model
call is one iteration, with the tool results the next call sent back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import openai
import pytest
from openai_sdk_agent import ask

from pytest_agentctx import (
    ANY,
    Cassette,
    LoopbackProvider,
    Nowhere,
    RecordMode,
    Regex,
    Trajectory,
    matches,
)

CASSETTES = Path(__file__).parent / "cassettes"

#: Every test's agent run stays within this (measured on the captured context).
pytestmark = pytest.mark.agent_budget(max_iterations=3, max_tool_calls=2, max_tokens=500)


@pytest.fixture
def agent_cassette_config() -> dict[str, object]:
    """This example keeps its cassettes beside it, one per test (the default is
    ``cassettes/`` at the rootdir)."""
    return {"directory": CASSETTES}


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
async def client(model_server: LoopbackProvider) -> AsyncIterator[openai.AsyncOpenAI]:
    """The SDK client the agent uses, pointed at the model server with a fake key."""
    async with openai.AsyncOpenAI(
        base_url=model_server.openai_base_url, api_key="sk-test", max_retries=0
    ) as sdk:
        yield sdk


async def test_answer_uses_both_tools(model_server, client, agent_context):
    model_server.reply(
        tool_calls=[("get_weather", {"city": "Paris"}), ("get_local_time", {"city": "Paris"})]
    ).reply("It is 18°C in Paris and 13:00 local time.")

    answer = await ask(client, "Weather and time in Paris?")

    assert answer == "It is 18°C in Paris and 13:00 local time."
    assert matches(
        agent_context.context,
        {
            "iterations": [
                {
                    "messages": [
                        {"role": "system", "content": Regex("weather assistant")},
                        {"role": "user", "content": "Weather and time in Paris?"},
                        {"role": "assistant", "tool_calls": [{"name": "get_weather"}, ANY]},
                        {"role": "tool", "name": "get_weather", "content": "18°C in Paris"},
                        {"role": "tool", "name": "get_local_time", "content": "13:00 in Paris"},
                    ],
                    "metadata": {"model": "gpt-4o-mini", "stop_reason": "tool_calls"},
                },
                {"tool_calls": [], "metadata": {"stop_reason": "stop"}},
            ],
            "final_output": answer,
        },
    )
    assert matches(agent_context.context, Nowhere({"content": Regex("^error:")}))


async def test_calls_each_tool_once_in_any_order(model_server, client, agent_context):
    model_server.reply(
        tool_calls=[("get_local_time", {"city": "Oslo"}), ("get_weather", {"city": "Oslo"})]
    ).reply("4°C in Oslo, where it is 13:00.")

    await ask(client, "Oslo: time and temperature?")

    assert agent_context.context == Trajectory(
        [("get_weather", {"city": "Oslo"}), ("get_local_time", {"city": "Oslo"})],
        mode="unordered",
    )


async def test_cairo_run_matches_its_snapshot(model_server, client, agent_context, agent_snapshot):
    model_server.reply_tool_call("get_weather", city="Cairo").reply("31°C in Cairo.")

    await ask(client, "How hot is it in Cairo?")

    assert agent_context.context == agent_snapshot
