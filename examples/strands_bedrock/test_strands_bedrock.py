"""Tests of the strands-agents inventory assistant: recorded once, replayed offline.

``pytest --agent-record examples/strands_bedrock`` runs the agent against the loopback
provider (a scripted Bedrock server on 127.0.0.1) and writes the cassettes beside this
file; a plain ``pytest`` replays them with the network blocked, and the server sees no
request.

strands streams through ConverseStream: the cassette keeps each AWS event-stream message
of the reply, and replays them one per chunk to botocore. ``agent_context`` rebuilds the
run's iteration context from those exchanges: each model call of the strands event loop is
one iteration, with the tool results its next call sent back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from strands import Agent
from strands.models import BedrockModel
from strands_inventory_agent import MODEL_ID, build_agent

from pytest_agentctx import Cassette, LoopbackProvider, RecordMode, Regex, Trajectory, matches

CASSETTES = Path(__file__).parent / "cassettes"

#: Every test's agent run stays within this (measured on the captured context).
pytestmark = pytest.mark.agent_budget(max_iterations=3, max_tool_calls=2, max_tokens=800)


@pytest.fixture
def agent_cassette_config() -> dict[str, object]:
    """This example keeps its cassettes beside it, one per test (the default is
    ``cassettes/`` at the rootdir)."""
    return {"directory": CASSETTES}


@pytest.fixture
def model_server(agent_cassette: Cassette) -> Iterator[LoopbackProvider]:
    """The model while recording: a server on 127.0.0.1 that plays the replies a test
    scripts. On replay the cassette answers every request, so the server must see none."""
    with LoopbackProvider() as provider:
        yield provider
        if agent_cassette.mode is RecordMode.NONE:
            assert provider.exchanges == []
        else:
            provider.verify()


@pytest.fixture
def agent(model_server: LoopbackProvider) -> Agent:
    """The assistant on a ``BedrockModel`` pointed at the model server: its
    ``endpoint_url``, and a boto3 session with made-up credentials (the server does not
    check SigV4, and the cassette keeps no credential)."""
    session = boto3.Session(
        aws_access_key_id="loopback", aws_secret_access_key="loopback", region_name="us-east-1"
    )
    model = BedrockModel(
        model_id=MODEL_ID, boto_session=session, endpoint_url=model_server.bedrock_endpoint_url
    )
    return build_agent(model)


def test_reorders_a_product_out_of_stock(model_server, agent, agent_context):
    model_server.reply_tool_call("check_stock", sku="SKU-2").reply_tool_call(
        "reorder", sku="SKU-2", quantity=10
    ).reply("SKU-2 was out of stock: I ordered 10 more, arriving in 3 days.")

    result = agent("Do we still have SKU-2? Order 10 if not.")

    assert matches(
        agent_context.context,
        {
            "iterations": [
                {
                    "messages": [
                        {"role": "system", "content": Regex("inventory assistant")},
                        {"role": "user", "content": "Do we still have SKU-2? Order 10 if not."},
                        {"role": "assistant", "tool_calls": [{"name": "check_stock"}]},
                        {"role": "tool", "content": "SKU-2: 0 in stock"},
                    ],
                    "metadata": {"provider": "bedrock", "stop_reason": "tool_use"},
                },
                {
                    "messages": [
                        {"role": "assistant", "tool_calls": [{"name": "reorder"}]},
                        {"role": "tool", "content": Regex("^ordered 10 x SKU-2")},
                    ]
                },
                {"tool_calls": [], "metadata": {"stop_reason": "end_turn"}},
            ],
            "final_output": str(result).strip(),
        },
    )
    assert agent_context.non_llm == []  # no request but the model calls


def test_checks_the_stock_before_reordering(model_server, agent, agent_context):
    model_server.reply_tool_call("check_stock", sku="SKU-3").reply_tool_call(
        "reorder", sku="SKU-3", quantity=5
    ).reply("Only 2 of SKU-3 left: I ordered 5 more.")

    agent("Is SKU-3 running low? Top it up.")

    assert agent_context.context == Trajectory(
        [("check_stock", {"sku": "SKU-3"}), ("reorder", {"sku": "SKU-3", "quantity": 5})]
    )


def test_plenty_in_stock_run_matches_its_snapshot(
    model_server, agent, agent_context, agent_snapshot
):
    model_server.reply_tool_call("check_stock", sku="SKU-1").reply(
        "SKU-1 has 12 units in stock: no need to reorder."
    )

    agent("Should we reorder SKU-1?")

    assert agent_context.context == agent_snapshot
