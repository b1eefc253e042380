"""Tests of the LangChain trip planner: recorded once, replayed offline.

``pytest --agent-record examples/langchain`` runs the agent against the loopback provider
(a scripted OpenAI server on 127.0.0.1) and writes the cassettes beside this file; a plain
``pytest`` replays them with the network blocked, and the server sees no request.

``agent_context`` rebuilds the run's iteration context from those exchanges: each model
call of the LangGraph loop is one iteration, with the tool messages its next call sent
back. LangChain's run ids and callbacks stay in the process, so they are not in it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from langchain_agent import build_agent, plan
from langchain_openai import ChatOpenAI

from pytest_agentctx import (
    ANY,
    Cassette,
    LoopbackProvider,
    RecordMode,
    Regex,
    Trajectory,
    Unordered,
    matches,
)

CASSETTES = Path(__file__).parent / "cassettes"

#: Every test's agent run stays within this (measured on the captured context).
pytestmark = pytest.mark.agent_budget(max_iterations=2, max_tool_calls=2, max_tokens=400)


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
async def planner(model_server: LoopbackProvider) -> AsyncIterator[Any]:
    """The trip planner on ``ChatOpenAI`` pointed at the model server, with an HTTP client
    the test closes (LangChain would otherwise keep a cached one open)."""
    async with httpx2.AsyncClient() as http:
        model = ChatOpenAI(
            model="gpt-4o-mini",
            base_url=model_server.openai_base_url,
            api_key="sk-test",
            max_retries=0,
            http_async_client=http,
        )
        yield build_agent(model)


async def test_checks_forecast_and_flights(model_server, planner, agent_context):
    model_server.reply(
        tool_calls=[
            ("get_forecast", {"city": "Lisbon"}),
            ("find_flights", {"origin": "Paris", "destination": "Lisbon"}),
        ]
    ).reply("Lisbon will be sunny at 24°C; take TP433 at 07:05.")

    answer = await plan(planner, "A sunny day trip from Paris tomorrow: is Lisbon good?")

    assert answer == "Lisbon will be sunny at 24°C; take TP433 at 07:05."
    assert matches(
        agent_context.context,
        {
            "iterations": [
                {
                    "messages": [
                        {"role": "system", "content": Regex("^You plan short trips")},
                        {"role": "user", "content": Regex("Lisbon")},
                        {"role": "assistant", "tool_calls": [ANY, ANY]},
                        *[{"role": "tool"}] * 2,
                    ],
                    "tool_calls": Unordered({"name": "get_forecast"}, {"name": "find_flights"}),
                },
                {"messages": [{"role": "assistant", "content": answer}]},
            ]
        },
    )
    assert agent_context.non_llm == []  # no request but the model calls


async def test_checks_the_forecast_whatever_else_it_does(model_server, planner, agent_context):
    model_server.reply_tool_call("get_forecast", city="Oslo").reply(
        "Oslo will be rainy at 6°C: not a sunny trip."
    )

    await plan(planner, "Sunny day trip from Paris to Oslo tomorrow?")

    assert agent_context.context == Trajectory(
        [("get_forecast", {"city": "Oslo"})], mode="superset"
    )


async def test_rome_run_matches_its_snapshot(model_server, planner, agent_context, agent_snapshot):
    model_server.reply(
        tool_calls=[
            ("get_forecast", {"city": "Rome"}),
            ("find_flights", {"origin": "Paris", "destination": "Rome"}),
        ]
    ).reply("Rome will be cloudy at 17°C and has no direct flight tomorrow.")

    await plan(planner, "Day trip from Paris to Rome tomorrow?")

    assert agent_context.context == agent_snapshot
