"""End-to-end tests of a strands-agents agent on Amazon Bedrock (``strands.Agent`` with
``strands.models.BedrockModel``, one ``@tool``).

The inner test points the agent's model at a :class:`~pytest_agentctx.LoopbackProvider` it
starts (``endpoint_url``, a ``boto3.Session`` of made-up credentials). The outer tests
record it with ``--agent-record``, then replay it offline: strands streams through
ConverseStream, which the cassette keeps as event-stream messages and replays chunk by
chunk to botocore, and ``agent_context`` shows the tool loop. Needs the ``frameworks``
extra (strands-agents), like the other framework tests.
"""

from __future__ import annotations

import pytest
import strands  # noqa: F401  (imported here so the inner runs do not import it again)

CONFTEST = """
import pytest

from pytest_agentctx import LoopbackProvider, RecordMode


@pytest.fixture
def model_server(agent_cassette):
    with LoopbackProvider() as provider:
        yield provider
        if agent_cassette.mode is RecordMode.NONE:
            assert provider.exchanges == []
        else:
            provider.verify()
"""

TESTS = '''
import boto3
import pytest
from strands import Agent, tool
from strands.models import BedrockModel

from pytest_agentctx import Trajectory, matches

MODEL = "us.anthropic.claude-3-5-haiku-20241022-v1:0"


@tool
def check_stock(sku: str) -> str:
    """How many units of a product are in stock."""
    return f"{sku}: 0 in stock"


@pytest.fixture(params=[True, False], ids=["stream", "converse"])
def agent(request, model_server):
    session = boto3.Session(
        aws_access_key_id="loopback", aws_secret_access_key="loopback", region_name="us-east-1"
    )
    model = BedrockModel(
        model_id=MODEL,
        boto_session=session,
        endpoint_url=model_server.bedrock_endpoint_url,
        streaming=request.param,
    )
    return Agent(
        model=model,
        tools=[check_stock],
        system_prompt="You answer stock questions.",
        callback_handler=None,
    )


def test_strands_agent(agent, model_server, agent_context):
    model_server.reply_tool_call("check_stock", sku="SKU-2").reply("SKU-2 is sold out.")

    result = agent("Any SKU-2 left?")

    assert str(result).strip() == "SKU-2 is sold out."
    assert agent_context.context == Trajectory([("check_stock", {"sku": "SKU-2"})])
    assert matches(
        agent_context.context,
        {
            "iterations": [
                {
                    "messages": [
                        {"role": "system", "content": "You answer stock questions."},
                        {"role": "user", "content": "Any SKU-2 left?"},
                        {"role": "assistant", "tool_calls": [{"name": "check_stock"}]},
                        {"role": "tool", "content": "SKU-2: 0 in stock"},
                    ],
                    "metadata": {"provider": "bedrock", "model": MODEL, "stop_reason": "tool_use"},
                },
                {"metadata": {"stop_reason": "end_turn"}},
            ],
        },
    )
    assert agent_context.non_llm == []
'''

QUIET = ("-p", "no:cacheprovider")


@pytest.fixture
def recorded(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(agent_pytester.path / "no-aws-config"))
    agent_pytester.makeconftest(CONFTEST)
    agent_pytester.makepyfile(test_strands=TESTS)
    agent_pytester.runpytest(*QUIET, "--agent-record").assert_outcomes(passed=2)
    return agent_pytester


def test_a_strands_agent_replays_offline_with_its_context(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest(*QUIET, "-v")

    result.assert_outcomes(passed=2)
    streamed = next((recorded.path / "cassettes").rglob("*stream*.json")).read_text()
    assert '"eventstream"' in streamed


def test_a_budget_counts_the_strands_agents_tool_calls(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest(*QUIET, "-o", "agent_budget_max_tool_calls=0")

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*agent budget exceeded: max_tool_calls 1 > 0*"])
