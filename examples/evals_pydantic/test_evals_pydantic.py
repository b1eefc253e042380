"""A pydantic-evals ``Dataset`` judged by its ``LLMJudge`` inside a test, recorded once and
replayed offline with the rest of the test's model calls.

``pytest --agent-record examples/evals_pydantic`` runs the dataset against the loopback
provider (a scripted OpenAI server on 127.0.0.1) and writes the cassette beside this file:
the agent's calls (the dataset's task) and the judge's calls, each judge call kept with
``role: judge``. A plain ``pytest`` replays both with the network blocked; the server sees
no request, and the report of the evaluation is the same every run.

The judge's model is wrapped in :class:`JudgeRole`, a pydantic-ai ``WrapperModel`` whose
requests run inside ``model_role("judge")``: the dataset's task and its evaluators run in
the same event loop, so only the model tells them apart.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import openai
import pytest
from pydantic_ai import Agent
from pydantic_ai.models import Model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.models.wrapper import WrapperModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_evals import Case, Dataset
from pydantic_evals.evaluators import LLMJudge

from pytest_agentctx import Cassette, LoopbackProvider, RecordMode, model_role

CASSETTES = Path(__file__).parent / "cassettes"

RUBRIC = "The answer is polite and names the order number it is about."


class JudgeRole(WrapperModel):
    """A model whose calls are a judge's: recorded with ``role: judge`` and replayed only
    from the judge's recordings, never counted in the agent's runs."""

    async def request(self, *args: Any, **kwargs: Any) -> Any:
        with model_role("judge"):
            return await super().request(*args, **kwargs)

    @asynccontextmanager
    async def request_stream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        with model_role("judge"):
            async with super().request_stream(*args, **kwargs) as stream:
                yield stream


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


@pytest.fixture
async def model(model_server: LoopbackProvider) -> AsyncIterator[Model]:
    """One OpenAI chat model on the model server, for the agent and (wrapped) the judge."""
    async with openai.AsyncOpenAI(
        base_url=model_server.openai_base_url, api_key="sk-test", max_retries=0
    ) as client:
        yield OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))


async def test_support_answers_pass_the_judge(model_server, model, agent_cassette, agent_context):
    # Recording: the agent's answer, then the judge's verdict (pydantic-evals asks the
    # judge for a `final_result` tool call carrying reason, pass and score), per case.
    # `pytest --agent-record=judge` replays the agent's call and sends only the judge's.
    if agent_cassette.mode is not RecordMode.JUDGE:
        model_server.reply("Sorry for the wait! Order A-1042 left our warehouse today.")
    model_server.reply_tool_call(
        "final_result", reason="Apologises and names A-1042.", score=1.0, **{"pass": True}
    )

    support = Agent(model, instructions="You are a polite support agent for a shop.")

    async def answer(question: str) -> str:
        return (await support.run(question)).output

    dataset = Dataset[str, str, None](
        name="support answers",
        cases=[Case(name="late order", inputs="Where is my order A-1042?")],
        evaluators=[LLMJudge(rubric=RUBRIC, model=JudgeRole(model), include_input=True)],
    )
    report = await dataset.evaluate(answer, max_concurrency=1, progress=False)

    [case] = report.cases
    assert case.output == "Sorry for the wait! Order A-1042 left our warehouse today."
    verdict = case.assertions["LLMJudge"]
    assert verdict.value is True
    assert verdict.reason == "Apologises and names A-1042."
    # The judge's call is the judge's: recorded and replayed with its role.
    assert [exchange.role for exchange in agent_context.exchanges] == ["agent", "judge"]
    # agent_context rebuilds the agent's runs alone: the evaluator's calls are not in them
    assert len(agent_context) == 1
