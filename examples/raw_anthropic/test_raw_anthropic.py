"""Tests of the raw-anthropic currency agent: recorded once, replayed offline.

``pytest --agent-record examples/raw_anthropic`` runs the agent against the loopback
provider (a scripted Anthropic server on 127.0.0.1, streaming its replies as server-sent
events) and writes the cassettes beside this file; a plain ``pytest`` replays them event
by event with the network blocked, and the server sees no request.

``agent_context`` rebuilds the run's iteration context from those exchanges (the streamed
events are joined by the same codec the package's runtime uses): each model call is one
iteration, with the ``tool_result`` blocks the next call sent back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anthropic
import pytest
from anthropic_sdk_agent import convert

from pytest_agentctx import Cassette, LoopbackProvider, RecordMode, Regex, Trajectory, matches

CASSETTES = Path(__file__).parent / "cassettes"

#: Every test's agent run stays within this (measured on the captured context).
pytestmark = pytest.mark.agent_budget(max_iterations=2, max_tool_calls=1, max_tokens=300)


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
async def client(model_server: LoopbackProvider) -> AsyncIterator[anthropic.AsyncAnthropic]:
    """The SDK client the agent uses, pointed at the model server with a fake key."""
    async with anthropic.AsyncAnthropic(
        base_url=model_server.anthropic_base_url, api_key="sk-ant-test", max_retries=0
    ) as sdk:
        yield sdk


async def test_converts_with_the_rate_it_looked_up(model_server, client, agent_context):
    model_server.reply(
        "Let me look up the rate.",
        tool_calls=[("get_exchange_rate", {"base": "EUR", "quote": "USD"})],
    ).reply("250 EUR is 270.00 USD.")

    answer = await convert(client, "How much is 250 EUR in USD?")

    assert answer == "250 EUR is 270.00 USD."
    assert matches(
        agent_context.context,
        {
            "iterations": [
                {
                    "messages": [
                        {"role": "system", "content": Regex("^You convert amounts")},
                        {"role": "user", "content": "How much is 250 EUR in USD?"},
                        {
                            "role": "assistant",
                            "content": "Let me look up the rate.",
                            "tool_calls": [{"name": "get_exchange_rate"}],
                        },
                        {"role": "tool", "content": "1.08"},
                    ],
                    "metadata": {"provider": "anthropic", "stop_reason": "tool_use"},
                },
                {"metadata": {"stop_reason": "end_turn"}},
            ],
            "final_output": Regex(r"270\.00 USD"),
        },
    )


async def test_asks_for_the_pair_in_the_question(model_server, client, agent_context):
    model_server.reply_tool_call("get_exchange_rate", base="GBP", quote="EUR").reply(
        "100 GBP is 117.65 EUR."
    )

    await convert(client, "Convert 100 GBP to EUR.")

    assert agent_context.context == Trajectory(
        [("get_exchange_rate", {"base": "GBP", "quote": "EUR"})]
    )


async def test_usd_to_jpy_run_matches_its_snapshot(
    model_server, client, agent_context, agent_snapshot
):
    model_server.reply_tool_call("get_exchange_rate", base="USD", quote="JPY").reply(
        "20 USD is 3024.00 JPY."
    )

    await convert(client, "What are 20 USD in yen?")

    assert agent_context.context == agent_snapshot
