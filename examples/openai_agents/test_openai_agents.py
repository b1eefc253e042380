"""Tests of the Agents-SDK library desk: recorded once, replayed offline.

``pytest --agent-record examples/openai_agents`` runs the agent against the loopback
provider (a scripted OpenAI Responses server on 127.0.0.1) and writes the cassettes beside
this file; a plain ``pytest`` replays them with the network blocked, and the server sees
no request. Tracing is off for these runs (``RunConfig(tracing_disabled=True)``): the SDK
would otherwise upload traces to api.openai.com from a background thread.

``agent_context`` rebuilds the run's iteration context from the Responses API exchanges:
each model call is one iteration, with the ``function_call_output`` items the next call
sent back as tool results.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import openai
import pytest
from agents import OpenAIProvider, RunConfig
from openai_agents_agent import ask, reading_guide

from pytest_agentctx import (
    Cassette,
    LoopbackProvider,
    RecordMode,
    Regex,
    Trajectory,
    matches,
    nested_runs,
)

CASSETTES = Path(__file__).parent / "cassettes"

#: Every test's agent run stays within this (measured on the captured context).
pytestmark = pytest.mark.agent_budget(max_iterations=3, max_tool_calls=2, max_tokens=400)


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
async def run_config(model_server: LoopbackProvider) -> AsyncIterator[RunConfig]:
    """The run's model provider on an SDK client pointed at the model server, no tracing."""
    async with openai.AsyncOpenAI(
        base_url=model_server.openai_base_url, api_key="sk-test", max_retries=0
    ) as client:
        yield RunConfig(
            model_provider=OpenAIProvider(openai_client=client, use_responses=True),
            tracing_disabled=True,
        )


async def test_checks_availability_before_answering(model_server, run_config, agent_context):
    model_server.reply_tool_call("search_catalogue", query="Dune").reply_tool_call(
        "check_availability", isbn="978-0441013593"
    ).reply("Yes: 2 copies of Dune are available.")

    answer = await ask("Can I borrow Dune?", run_config)

    assert matches(
        agent_context.context,
        {
            "iterations": [
                {
                    "messages": [
                        {"role": "system", "content": Regex("public library")},
                        {"role": "user", "content": "Can I borrow Dune?"},
                        {"role": "assistant", "tool_calls": [{"name": "search_catalogue"}]},
                        {"role": "tool", "content": Regex("^978-0441013593: Dune")},
                    ],
                    "metadata": {"provider": "openai-responses", "model": "gpt-4o-mini"},
                },
                {
                    "tool_calls": [
                        {"name": "check_availability", "arguments": {"isbn": "978-0441013593"}}
                    ]
                },
                {"tool_calls": []},
            ],
            "final_output": answer,
        },
    )
    assert agent_context.non_llm == []  # no tracing upload, no other request


async def test_searches_then_checks_the_book_found(model_server, run_config, agent_context):
    model_server.reply_tool_call("search_catalogue", query="Austen").reply_tool_call(
        "check_availability", isbn="978-0141439587"
    ).reply("Emma is in the catalogue, but no copy is available right now.")

    await ask("Anything by Jane Austen I can take home today?", run_config)

    assert agent_context.context == Trajectory(
        ["search_catalogue", ("check_availability", {"isbn": "978-0141439587"})]
    )


async def test_author_search_run_matches_its_snapshot(
    model_server, run_config, agent_context, agent_snapshot
):
    model_server.reply_tool_call("search_catalogue", query="Frank Herbert").reply(
        "We have Dune by Frank Herbert (ISBN 978-0441013593)."
    )

    await ask("Do you have books by Frank Herbert?", run_config)

    assert agent_context.context == agent_snapshot


async def test_the_summary_is_the_sub_agents_run(model_server, run_config, agent_context):
    model_server.reply_tool_call("summarise_book", input="Dune")  # the guide
    model_server.reply("A duke's son survives on a desert planet.")  # the summariser
    model_server.reply("Try Dune: a duke's son survives on a desert planet.")  # the guide

    await ask("Recommend me Dune?", run_config, agent=reading_guide)

    guide = agent_context.context  # one conversation: the sub-agent run is nested in it
    [(path, summary)] = nested_runs(guide)
    assert path == f"iterations[0].metadata.subagents.{guide.all_tool_calls[0].id}.context"
    assert matches(
        summary,
        {
            "iterations": [
                {
                    "messages": [
                        {"role": "system", "content": Regex("^Summarise the book")},
                        {"role": "user", "content": "Dune"},
                        {"role": "assistant", "content": Regex("desert planet")},
                    ]
                }
            ]
        },
    )
    assert guide.iterations[0].messages[-1].content == summary.final_output
    assert guide == Trajectory([("summarise_book", {"input": "Dune"})])
