"""Tests of the research team, offline: the orchestrator, its sub-agents and their contexts.

``fake_llm`` scripts every model call in the order the runtime makes them (the
orchestrator's and its sub-agents', which here delegate one after the other);
``fake_vector_store`` and ``artifact_store`` are the knowledge base and the workspace that
``agent_runtime`` hands to the agents.
"""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
from research_agent import (
    Brief,
    Publisher,
    orchestrator_agent,
    researcher_agent,
    seed_knowledge_base,
    writer_agent,
)

from pytest_agentctx import (
    AgentContext,
    Iteration,
    LoopbackProvider,
    Message,
    OpenAIChatProvider,
    Trajectory,
    matches,
    nested_runs,
    run_stats,
)

BRIEF = Brief(topic="How long do refunds take to reach my card?")
FINDINGS = (
    "- Refunds reach the original card within five business days [refunds].\n"
    "- Gift cards and final-sale items cannot be refunded [refund-exceptions]."
)
REPORT = "Your refund reaches your card within five business days [refunds]."
RESEARCH_TASK = "Find what the knowledge base says about refund times."
WRITING_TASK = "Write and publish a customer answer from research/refunds.md."


def summary(text: str) -> str:
    return json.dumps({"summary": text})


def script_research(model) -> None:
    """The orchestrator delegates to the researcher, which writes its findings."""
    model.reply(tool_calls=[("researcher", {"task": RESEARCH_TASK})], usage=usage(900, 30))
    model.reply(
        tool_calls=[("write_artifact", {"path": "research/refunds.md", "content": FINDINGS})],
        usage=usage(700, 60),
    )
    model.reply(summary("Saved two facts to research/refunds.md."), usage=usage(800, 20))


def script_writing(model, *, ends: bool = True) -> None:
    """The orchestrator delegates to the writer, which reads, saves and publishes."""
    model.reply(tool_calls=[("writer", {"task": WRITING_TASK})], usage=usage(1000, 30))
    model.reply(
        tool_calls=[("read_artifact", {"path": "research/refunds.md"})], usage=usage(600, 20)
    )
    model.reply(
        tool_calls=[("save_report", {"path": "reports/refunds.md", "content": REPORT})],
        usage=usage(700, 40),
    )
    model.reply(tool_calls=[("publish", {"path": "reports/refunds.md"})], usage=usage(750, 15))
    if ends:
        model.reply(summary("Published reports/refunds.md."), usage=usage(800, 15))


def script_team(model) -> None:
    script_research(model)
    script_writing(model)
    model.reply("The answer is live at reports/refunds.md.", usage=usage(1200, 20))


def usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens}


@pytest.fixture
def deps() -> dict[str, Publisher]:
    return {"publisher": Publisher()}


@pytest.fixture
def knowledge_base(fake_vector_store):
    return seed_knowledge_base(fake_vector_store)


def report(result, iteration: int) -> dict:
    """The delegation report the orchestrator received in one of its iterations."""
    return json.loads(result.context.iterations[iteration].messages[-1].content)


async def test_the_team_researches_then_writes_and_publishes(
    agent_runtime, fake_llm, knowledge_base, artifact_store, deps
):
    script_team(fake_llm)

    result = await agent_runtime.run(
        orchestrator_agent(), "Publish an answer", state=BRIEF, deps=deps
    )

    assert result.output == "The answer is live at reports/refunds.md."
    assert result.context == Trajectory(
        [
            ("researcher", {"task": RESEARCH_TASK}),
            "write_artifact",
            ("writer", {"task": WRITING_TASK}),
            "read_artifact",
            "save_report",
            "publish",
        ],
        nested=True,
    )
    assert artifact_store.read("reports/refunds.md") == REPORT
    assert deps["publisher"].published == {"reports/refunds.md": REPORT}


async def test_each_sub_agent_runs_in_its_own_context(
    agent_runtime, fake_llm, knowledge_base, artifact_store, deps
):
    script_team(fake_llm)

    result = await agent_runtime.run(
        orchestrator_agent(), "Publish an answer", state=BRIEF, deps=deps
    )

    runs = {path: context for path, context in nested_runs(result)}
    match runs:
        case {
            "iterations[0].metadata.subagents.researcher.context": AgentContext(
                iterations=[Iteration(number=1), Iteration(number=2)]
            ),
            "iterations[1].metadata.subagents.writer.context": AgentContext(
                iterations=[
                    Iteration(number=1),
                    Iteration(number=2),
                    Iteration(number=3),
                    Iteration(number=4),
                ]
            ),
        }:
            pass
        case other:
            pytest.fail(f"unexpected nested runs: {sorted(other)}")
    # the orchestrator's own conversation holds the reports, not the sub-agents' messages
    assert [m.role for m in result.context.get_all_messages()].count("system") == 1


async def test_the_orchestrator_gets_reports_of_facts_and_summaries(
    agent_runtime, fake_llm, knowledge_base, artifact_store, deps
):
    script_team(fake_llm)

    result = await agent_runtime.run(
        orchestrator_agent(), "Publish an answer", state=BRIEF, deps=deps
    )

    assert report(result, 0) == {
        "subagent": "researcher",
        "agent": "researcher",
        "status": "completed",
        "summary": "Saved two facts to research/refunds.md.",
        "tools_used": ["write_artifact"],
        "tool_calls": 1,
        "iterations": 2,
        "usage": {"input_tokens": 1500, "output_tokens": 80, "total_tokens": 1580},
        "duration_s": 3.0,
        "artifacts": {"created": ["research/refunds.md"], "modified": []},
        "resumed": False,
    }
    match report(result, 1):
        case {
            "status": "completed",
            "tools_used": ["read_artifact", "save_report", "publish"],
            "artifacts": {"created": ["reports/refunds.md"], "modified": []},
        }:
            pass
        case other:
            pytest.fail(f"unexpected writer report: {other}")


async def test_the_researcher_reads_the_topic_and_the_nearest_documents(
    agent_runtime, fake_llm, knowledge_base, artifact_store, deps
):
    script_team(fake_llm)

    result = await agent_runtime.run(
        orchestrator_agent(), "Publish an answer", state=BRIEF, deps=deps
    )

    researcher_request = fake_llm.requests[1]
    assert researcher_request.messages[1]["content"].startswith("<context>\n## Topic\n")
    assert matches(
        result.context.iterations[0].metadata["subagents"]["researcher"]["context"],
        {
            "iterations": [
                {
                    "metadata": {
                        "context": {
                            "segments": [
                                {"kind": "state", "path": "topic"},
                                {
                                    "kind": "retrieval",
                                    "results": [
                                        {"source_id": "refunds", "rank": 1},
                                        {"source_id": "refund-exceptions", "rank": 2},
                                    ],
                                },
                            ]
                        }
                    }
                },
                ...,
            ]
        },
    )


async def test_prompts_come_from_templates_with_the_examples_override():
    writer_prompt = writer_agent().system_prompt or ""
    researcher_prompt = researcher_agent().system_prompt or ""

    assert writer_prompt.startswith("You are the writer agent of a customer support team")
    assert researcher_prompt.startswith("You are the researcher agent: you find facts")
    assert "You can call these tools: read_artifact, save_report, publish." in writer_prompt


async def test_the_run_matches_its_snapshot(
    agent_runtime, fake_llm, knowledge_base, artifact_store, deps, agent_snapshot
):
    script_team(fake_llm)

    result = await agent_runtime.run(
        orchestrator_agent(), "Publish an answer", state=BRIEF, deps=deps
    )

    assert result.context == agent_snapshot


@pytest.mark.agent_budget(max_iterations=12, max_tool_calls=6, max_tokens=10_000)
async def test_the_budget_counts_the_orchestrator_and_its_sub_agents(
    agent_runtime, fake_llm, knowledge_base, artifact_store, deps
):
    script_team(fake_llm)

    result = await agent_runtime.run(
        orchestrator_agent(), "Publish an answer", state=BRIEF, deps=deps
    )

    stats = run_stats(result)
    own = run_stats(result, nested=False)
    assert (own.iterations, own.tool_calls, own.total_tokens) == (3, 2, 3180)
    assert (stats.iterations, stats.tool_calls, stats.total_tokens) == (9, 6, 3180 + 1580 + 2940)
    # gpt-4o-mini: $0.15 per million input tokens, $0.60 per million output tokens
    assert stats.cost_usd == pytest.approx(7450 * 0.15e-6 + 250 * 0.60e-6)


async def test_an_outage_fails_the_writer_and_discards_the_saved_report(
    agent_runtime, fake_llm, knowledge_base, artifact_store
):
    script_research(fake_llm)
    script_writing(fake_llm, ends=False)
    fake_llm.reply("Publishing failed: the service is down. Nothing was published.")

    result = await agent_runtime.run(
        orchestrator_agent(),
        "Publish an answer",
        state=BRIEF,
        deps={"publisher": Publisher(down=True)},
    )

    match report(result, 1):
        case {"status": "failed", "error": str(error), "artifacts": {"created": []}}:
            assert "step 'publish' failed" in error
            assert "Compensated: save_report (compensated)" in error
        case other:
            pytest.fail(f"unexpected writer report: {other}")
    ((_, writer_run),) = [(p, c) for p, c in nested_runs(result) if "writer" in p]
    match writer_run.iterations[-1].metadata:
        case {
            "failures": [{"step": "publish", "error_type": "ConnectionError", "recovered": False}],
            "compensations": [{"step": "save_report", "status": "compensated"}],
        }:
            pass
        case other:
            pytest.fail(f"unexpected failure record: {other}")
    assert not artifact_store.exists("reports/refunds.md")
    assert artifact_store.exists("research/refunds.md")


async def test_a_delayed_publication_is_recovered_by_the_handler(
    agent_runtime, fake_llm, knowledge_base, artifact_store
):
    script_team(fake_llm)

    result = await agent_runtime.run(
        orchestrator_agent(),
        "Publish an answer",
        state=BRIEF,
        deps={"publisher": Publisher(delayed=True)},
    )

    ((_, writer_run),) = [(p, c) for p, c in nested_runs(result) if "writer" in p]
    match writer_run.iterations[2]:
        case Iteration(
            messages=[_, Message(role="tool", is_error=False, content=str(text))],
            metadata={"failures": [{"error_type": "PublishDelayed", "recovered": True}]},
        ):
            assert text.startswith("Queued: reports/refunds.md is queued")
        case other:
            pytest.fail(f"unexpected iteration: {other}")
    assert report(result, 1)["status"] == "completed"


async def test_asking_for_a_change_resumes_the_writer(
    agent_runtime, fake_llm, knowledge_base, artifact_store, deps
):
    script_team(fake_llm)
    fake_llm.reply(tool_calls=[("writer", {"task": "Make it shorter."})], usage=usage(1300, 20))
    fake_llm.reply(
        tool_calls=[("save_report", {"path": "reports/refunds.md", "content": "Five days."})],
        usage=usage(900, 10),
    )
    fake_llm.reply(summary("Shortened reports/refunds.md."), usage=usage(950, 10))
    fake_llm.reply("Shortened.", usage=usage(1400, 5))
    first = await agent_runtime.run(
        orchestrator_agent(), "Publish an answer", state=BRIEF, deps=deps
    )

    second = await agent_runtime.continue_conversation(
        first, "Make it shorter", state=BRIEF, deps=deps
    )

    match report(second, 3):
        case {
            "resumed": True,
            "status": "completed",
            "artifacts": {"modified": ["reports/refunds.md"]},
        }:
            pass
        case other:
            pytest.fail(f"unexpected report: {other}")
    resumed_request = fake_llm.requests[-3]
    roles = [m["role"] for m in resumed_request.messages]
    assert roles[:3] == ["system", "user", "assistant"]
    assert roles[-1] == "user"
    assert resumed_request.messages[-1]["content"] == "Make it shorter."
    assert agent_runtime.results == [first, second]


# -- a recorded run ------------------------------------------------------------------------


@pytest.fixture
def agent_cassette_config() -> dict[str, object]:
    """This example keeps its cassettes beside it, one per test."""
    return {"directory": Path(__file__).parent / "cassettes"}


@pytest.fixture
def loopback():
    """A scripted OpenAI-compatible server on 127.0.0.1: what the cassette was recorded
    against (``pytest examples/research --agent-record``). Replays never reach it."""
    with LoopbackProvider() as provider:
        script_team(provider)
        yield provider


async def test_a_recorded_run_replays_offline(
    agent_runtime, agent_cassette, loopback, knowledge_base, artifact_store, deps
):
    client = openai.AsyncOpenAI(base_url=loopback.openai_base_url, api_key="sk-test", max_retries=0)
    agent_runtime.providers["openai"] = OpenAIChatProvider(client=client)

    async with client:
        result = await agent_runtime.run(
            orchestrator_agent(), "Publish an answer", state=BRIEF, deps=deps
        )

    if agent_cassette.mode == "rewrite":
        loopback.verify()
    else:
        assert agent_cassette.replayed == 9
        assert loopback.exchanges == []
    assert result.context == Trajectory(
        ["researcher", "write_artifact", "writer", "read_artifact", "save_report", "publish"],
        nested=True,
    )
