"""A DeepEval ``GEval`` metric measured inside a test, its judge's calls recorded once and
replayed offline with the agent's.

``pytest --agent-record examples/evals_deepeval`` runs the test against the loopback
provider (a scripted OpenAI server on 127.0.0.1) and writes the cassette beside this file:
the agent's call, then the judge's, kept with ``role: judge``. A plain ``pytest`` replays
both with the network blocked, and the metric gives the same score and reason every run.

``GEval`` calls its model (``OpenAIModel``, the OpenAI SDK) from ``measure``: the test
measures inside ``model_role("judge")``, after the agent has answered. ``async_mode=False``
keeps the metric's calls in the test's thread (its async mode may run them in an event loop
of another thread, which starts with the agent's role).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from deepeval.metrics import GEval
from deepeval.models import OpenAIModel
from deepeval.test_case import LLMTestCase, SingleTurnParams

from pytest_agentctx import Cassette, LoopbackProvider, RecordMode, model_role

CASSETTES = Path(__file__).parent / "cassettes"


@pytest.fixture
def agent_cassette_config() -> dict[str, object]:
    """This example keeps its cassettes beside it, one per test."""
    return {"directory": CASSETTES}


@pytest.fixture
def model_server(agent_cassette: Cassette) -> Iterator[LoopbackProvider]:
    """The model while recording (agent and judge alike): a server on 127.0.0.1 playing the
    replies the test scripts. On replay the cassette answers every request."""
    with LoopbackProvider() as provider:
        yield provider
        if agent_cassette.mode is RecordMode.NONE:
            assert provider.exchanges == []
        else:
            provider.verify()


def test_the_answer_is_polite_and_names_the_order(model_server, agent_cassette, agent_context):
    # Recording: the agent's answer, then the judge's score and reason (GEval asks for a
    # JSON object, on a scale of 0 to 10).
    # `pytest --agent-record=judge` replays the agent's call and sends only the judge's.
    if agent_cassette.mode is not RecordMode.JUDGE:
        model_server.reply("Sorry for the wait! Order A-1042 left our warehouse today.")
    model_server.reply('{"score": 9, "reason": "Apologises and names order A-1042."}')
    question = "Where is my order A-1042?"

    with openai.OpenAI(
        base_url=model_server.openai_base_url, api_key="sk-test", max_retries=0
    ) as client:
        answer = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {"role": "system", "content": "You are a polite support agent for a shop."},
                {"role": "user", "content": question},
            ],
        )
    output = answer.choices[0].message.content

    politeness = GEval(
        name="Polite and specific",
        evaluation_steps=[
            "Check that the answer is polite.",
            "Check that the answer names the order number the user asked about.",
        ],
        evaluation_params=[SingleTurnParams.INPUT, SingleTurnParams.ACTUAL_OUTPUT],
        model=OpenAIModel(
            model="gpt-4o-mini", base_url=model_server.openai_base_url, api_key="sk-test"
        ),
        threshold=0.7,
        async_mode=False,
    )
    with model_role("judge"):
        politeness.measure(LLMTestCase(input=question, actual_output=output))

    assert politeness.score == 0.9
    assert politeness.reason == "Apologises and names order A-1042."
    assert politeness.is_successful()
    roles = [exchange.role for exchange in agent_context.exchanges]
    assert roles == ["agent", "judge"]
    # agent_context rebuilds the agent's runs alone: the evaluator's calls are not in them
    assert len(agent_context) == 1
