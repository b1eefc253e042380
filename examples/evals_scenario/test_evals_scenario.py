"""A langwatch-scenario simulation inside a test: its ``UserSimulatorAgent`` and
``JudgeAgent`` recorded once and replayed offline with the agent's own calls.

``pytest --agent-record examples/evals_scenario`` runs the scenario against the loopback
provider (a scripted OpenAI server on 127.0.0.1) and writes the cassette beside this file:
the simulated user's calls kept with ``role: user_sim``, the judge's with ``role: judge``,
the agent's with none. A plain ``pytest`` replays them all with the network blocked.

scenario's agents reach the model through LiteLLM; :class:`SimulatedUser` and
:class:`Judge` are its own classes whose ``call`` runs inside ``model_role(...)``, so every
model call they make, whichever HTTP client LiteLLM uses, carries their role.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
import scenario
from scenario._tracing.judge_span_collector import JudgeSpanCollector

from pytest_agentctx import Cassette, LoopbackProvider, RecordMode, model_role

CASSETTES = Path(__file__).parent / "cassettes"

#: scenario's judge calls a function of the langwatch SDK that warns it is deprecated.
pytestmark = pytest.mark.filterwarnings("ignore:Call to deprecated function:DeprecationWarning")

CRITERIA = ["The agent names the order number the user asked about"]


class SimulatedUser(scenario.UserSimulatorAgent):
    """scenario's simulated user, its model calls made with the role ``user_sim``."""

    async def call(self, input: scenario.AgentInput) -> Any:
        with model_role("user_sim"):
            return await super().call(input)


class Judge(scenario.JudgeAgent):
    """scenario's judge, its model calls made with the role ``judge``."""

    async def call(self, input: scenario.AgentInput) -> Any:
        with model_role("judge"):
            return await super().call(input)


class SupportAgent(scenario.AgentAdapter):
    """The agent under test: one chat completion on the OpenAI SDK per turn. scenario runs
    the simulation in an event loop of its own, so the client is made (and closed) in it."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    async def call(self, input: scenario.AgentInput) -> Any:
        async with openai.AsyncOpenAI(
            base_url=self.base_url, api_key="sk-test", max_retries=0
        ) as client:
            completion = await client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[
                    {"role": "system", "content": "You are a polite support agent for a shop."},
                    # scenario's messages carry a trace id of their own: only what the
                    # model reads is sent
                    *({"role": m["role"], "content": m["content"]} for m in input.messages),
                ],
            )
        return completion.choices[0].message.content


class NoSpans(JudgeSpanCollector):
    """No OpenTelemetry spans for the judge: scenario's spans of the run carry durations,
    ids and times that differ every run, and a judge prompt holding them could never be
    replayed. The judge sees the conversation."""

    def get_spans_for_thread(self, thread_id: str) -> list[Any]:
        return []


@pytest.fixture
def agent_cassette_config() -> dict[str, object]:
    """This example keeps its cassettes beside it, one per test."""
    return {"directory": CASSETTES}


@pytest.fixture
def model_server(agent_cassette: Cassette) -> Iterator[LoopbackProvider]:
    """The model while recording (agent, simulated user and judge): a server on 127.0.0.1
    playing the replies the test scripts. On replay the cassette answers every request."""
    with LoopbackProvider() as provider:
        yield provider
        if agent_cassette.mode is RecordMode.NONE:
            assert provider.exchanges == []
        else:
            provider.verify()


async def test_the_agent_names_the_order(model_server, agent_cassette, agent_context):
    # Recording: the simulated user's first message, the agent's answer, the judge's
    # verdict (scenario's finish_test tool, one status per criterion).
    # `pytest --agent-record=judge` replays the simulated user's and the agent's calls and
    # sends only the judge's.
    if agent_cassette.mode is not RecordMode.JUDGE:
        model_server.reply("Hi, where is my order A-1042?")
        model_server.reply("Sorry for the wait! Order A-1042 left our warehouse today.")
    model_server.reply_tool_call(
        "finish_test",
        criteria={
            "the_agent_names_the_order_number_the_user_asked_about": {
                "requirement": "The agent names the order number.",
                "reasoning": "It names A-1042.",
                "status": "passed",
            }
        },
        reasoning="The agent named A-1042.",
    )
    llm = {"model": "openai/gpt-4o-mini", "api_base": model_server.openai_base_url}

    result = await scenario.run(
        name="late order",
        description="A customer asks where their late order A-1042 is.",
        agents=[
            SupportAgent(model_server.openai_base_url),
            SimulatedUser(**llm, api_key="sk-test"),
            Judge(**llm, api_key="sk-test", criteria=CRITERIA, span_collector=NoSpans()),
        ],
        script=[scenario.user(), scenario.agent(), scenario.judge()],
    )

    assert result.success, result.reasoning
    assert result.passed_criteria == CRITERIA
    roles = [exchange.role for exchange in agent_context.exchanges]
    assert roles == ["user_sim", "agent", "judge"]
    # agent_context rebuilds the agent's runs alone: the evaluator's calls are not in them
    assert len(agent_context) == 1
