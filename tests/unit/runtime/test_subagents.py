"""Unit tests of sub-agents: delegation, reports, resumption, concurrency, refusals.

The models are served by :class:`Router`, a provider that answers each model (``local:<name>``)
from its own script, so concurrent sub-agents get their replies whatever order their calls
arrive in; its ``yields`` make one model answer later than another, to show the contexts do
not depend on that order.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_agentctx.assertions.patterns.base import ANY
from pytest_agentctx.assertions.patterns.report import matches
from pytest_agentctx.assertions.trajectory import Trajectory, nested_runs
from pytest_agentctx.context.clock import StepClock
from pytest_agentctx.context.model import AgentContext, Iteration, Message, ToolCall
from pytest_agentctx.doubles.fake_tools import FakeTools
from pytest_agentctx.doubles.ids import SequentialIds
from pytest_agentctx.reports.figures import run_stats
from pytest_agentctx.runtime.agent import Agent, SubAgent
from pytest_agentctx.runtime.artifacts import LocalArtifactStore, write_artifact
from pytest_agentctx.runtime.delegation import (
    SUMMARY_INSTRUCTIONS,
    SubAgentSummary,
    parse_summary,
)
from pytest_agentctx.runtime.errors import AgentDefinitionError
from pytest_agentctx.runtime.loop import AgentRuntime
from pytest_agentctx.runtime.persistence import load_run, save_run
from pytest_agentctx.runtime.tools import tool
from pytest_agentctx.traffic.codecs import Codec, openai_chat

DONE = json.dumps({"summary": "Found three sources."})


def chat(
    content: str | None = None,
    calls: tuple[tuple[str, str, dict[str, Any]], ...] = (),
    usage: tuple[int, int] = (10, 5),
) -> dict[str, Any]:
    """A chat completions body: text and/or tool calls ``(id, name, arguments)``."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "local-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        },
    }


class Router:
    """Answers each model from its own script; records the requests per model."""

    codec: Codec = openai_chat

    def __init__(
        self, script: Mapping[str, list[dict[str, Any]]], yields: Mapping[str, int] | None = None
    ) -> None:
        self.script = {model: list(replies) for model, replies in script.items()}
        self.yields = dict(yields or {})
        self.sent: dict[str, list[Mapping[str, Any]]] = {}
        self.order: list[str] = []

    async def send(self, body: Mapping[str, Any]) -> dict[str, Any]:
        model = str(body["model"])
        self.sent.setdefault(model, []).append(body)
        for _ in range(self.yields.get(model, 0)):
            await asyncio.sleep(0)  # give the other tasks a turn (no time passes)
        self.order.append(model)
        return self.script[model].pop(0)


def runtime(router: Router, **options: Any) -> AgentRuntime:
    return AgentRuntime(
        clock=StepClock(), ids=SequentialIds(), providers={"local": router}, **options
    )


@tool
def search(query: str) -> str:
    """Search the knowledge base."""
    return f"3 results for {query}"


researcher = Agent(
    name="researcher", model="local:researcher", system_prompt="You research.", tools=[search]
)
writer = Agent(name="writer", model="local:writer", system_prompt="You write.")


def orchestrator(*subs: SubAgent, **options: Any) -> Agent:
    tools = subs or (SubAgent(researcher, id="researcher"), SubAgent(writer, id="writer"))
    return Agent(name="orchestrator", model="local:orchestrator", tools=tools, **options)


def delegate(call_id: str, sub_id: str, task: str) -> tuple[str, str, dict[str, Any]]:
    return (call_id, sub_id, {"task": task})


def report(result: Any, position: int = -1, iteration: int = 0) -> dict[str, Any]:
    """The JSON report a tool message of the parent carries."""
    tool_messages = [m for m in result.context.iterations[iteration].messages if m.role == "tool"]
    data: dict[str, Any] = json.loads(tool_messages[position].content)
    return data


# -- definition ----------------------------------------------------------------------------


def test_a_sub_agent_is_a_tool_named_by_its_id_taking_a_task():
    sub = SubAgent(researcher, id="research_team", description="Finds facts.")

    match sub.spec:
        case object(
            name="research_team",
            description="Finds facts.",
            parameters={"properties": {"task": {"type": "string"}}, "required": ["task"]},
        ):
            pass
        case other:
            pytest.fail(f"unexpected spec: {other}")
    assert sub.id == "research_team"


def test_as_tool_makes_a_sub_agent_named_after_the_agent():
    sub = researcher.as_tool()

    assert (type(sub), sub.id, sub.agent) == (SubAgent, "researcher", researcher)


def test_a_sub_agent_that_delegates_itself_is_refused_at_definition():
    lead = orchestrator()

    with pytest.raises(AgentDefinitionError, match="sub-agents do not call each other"):
        SubAgent(lead, id="lead")


def test_a_sub_agent_needs_an_agent():
    with pytest.raises(AgentDefinitionError, match="SubAgent\\(\\) takes an Agent, got str"):
        SubAgent("researcher")  # type: ignore[arg-type]


def test_the_summary_instructions_follow_the_sub_agents_system_prompt():
    prepared = SubAgent(researcher).prepared_agent()

    assert prepared.system_prompt == f"You research.\n\n{SUMMARY_INSTRUCTIONS}"


def test_summary_instructions_none_keeps_the_agent_as_it_is():
    assert SubAgent(researcher, summary_instructions=None).prepared_agent() is researcher


# -- the summary ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"summary": "done"}', SubAgentSummary(summary="done")),
        (
            '```json\n{"summary": "done", "blocked": true, "reason": "no access"}\n```',
            SubAgentSummary(summary="done", blocked=True, reason="no access"),
        ),
        ('{"summary": "done", "extra": 1}', SubAgentSummary(summary="done")),
    ],
)
def test_parse_summary_reads_a_json_summary(text, expected):
    assert parse_summary(text) == expected


def test_parse_summary_reads_a_blocked_answer_that_gives_a_reason_but_no_summary():
    parsed = parse_summary('{"blocked": true, "reason": "no access"}')

    assert parsed == SubAgentSummary(summary=None, blocked=True, reason="no access")


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "Done!",
        "[1, 2]",
        '{"summary": 3}',
        '{"blocked": false}',
        '{"blocked": true}',
        '{"blocked": false, "reason": "no access"}',
        "{bad json",
    ],
)
def test_parse_summary_gives_none_for_a_malformed_summary(text):
    assert parse_summary(text) is None


# -- delegation ----------------------------------------------------------------------------


async def test_the_sub_agents_context_is_stored_in_the_parent_iterations_metadata():
    router = Router(
        {
            "orchestrator": [
                chat(calls=(delegate("c1", "researcher", "Find refunds"),)),
                chat("Done."),
            ],
            "researcher": [chat(calls=(("s1", "search", {"query": "refunds"}),)), chat(DONE)],
        }
    )

    result = await runtime(router).run(orchestrator(), "Write about refunds")

    match result.context.iterations[0].metadata["subagents"]:
        case {
            "researcher": {
                "agent": "researcher",
                "status": "completed",
                "task": "Find refunds",
                "tool_call_id": "c1",
                "context": {
                    "iterations": [
                        {"number": 1, "tool_calls": [{"name": "search"}]},
                        {"number": 2, "tool_calls": []},
                    ]
                },
            }
        }:
            pass
        case other:
            pytest.fail(f"unexpected sub-agent record: {other}")


async def test_the_sub_agents_run_is_found_by_nested_runs_and_nested_trajectories():
    router = Router(
        {
            "orchestrator": [chat(calls=(delegate("c1", "researcher", "Find"),)), chat("Done.")],
            "researcher": [chat(calls=(("s1", "search", {"query": "refunds"}),)), chat(DONE)],
        }
    )

    result = await runtime(router).run(orchestrator(), "Go")

    assert [path for path, _ in nested_runs(result)] == [
        "iterations[0].metadata.subagents.researcher.context"
    ]
    assert result.context == Trajectory(
        ["researcher", ("search", {"query": "refunds"})], nested=True
    )


async def test_the_parent_receives_a_report_of_facts_and_the_summary():
    router = Router(
        {
            "orchestrator": [chat(calls=(delegate("c1", "researcher", "Find"),)), chat("Done.")],
            "researcher": [
                chat(calls=(("s1", "search", {"query": "a"}), ("s2", "search", {"query": "b"}))),
                chat(DONE, usage=(30, 7)),
            ],
        }
    )

    result = await runtime(router).run(orchestrator(), "Go")

    assert report(result) == {
        "subagent": "researcher",
        "agent": "researcher",
        "status": "completed",
        "summary": "Found three sources.",
        "tools_used": ["search"],
        "tool_calls": 2,
        "iterations": 2,
        "usage": {"input_tokens": 40, "output_tokens": 12, "total_tokens": 52},
        "duration_s": 3.0,
        "artifacts": {"created": [], "modified": []},
        "resumed": False,
    }


async def test_the_sub_agents_system_prompt_carries_the_summary_instructions():
    router = Router(
        {
            "orchestrator": [chat(calls=(delegate("c1", "writer", "Draft"),)), chat("Done.")],
            "writer": [chat(DONE)],
        }
    )

    await runtime(router).run(orchestrator(), "Go")

    match router.sent["writer"][0]["messages"]:
        case [{"role": "system", "content": str(prompt)}, {"role": "user", "content": "Draft"}]:
            assert prompt.endswith(SUMMARY_INSTRUCTIONS)
        case other:
            pytest.fail(f"unexpected request: {other}")


async def test_a_malformed_summary_gives_status_partial_with_the_raw_text():
    router = Router(
        {
            "orchestrator": [chat(calls=(delegate("c1", "writer", "Draft"),)), chat("Done.")],
            "writer": [chat("Here is your draft, no JSON.")],
        }
    )

    result = await runtime(router).run(orchestrator(), "Go")

    match report(result):
        case {
            "status": "partial",
            "summary": None,
            "raw_output": "Here is your draft, no JSON.",
            "error": str(),
        }:
            pass
        case other:
            pytest.fail(f"unexpected report: {other}")
    assert result.output == "Done."


async def test_a_summary_that_says_blocked_gives_status_blocked_with_the_reason():
    blocked = json.dumps({"summary": "Tried the KB.", "blocked": True, "reason": "No access."})
    router = Router(
        {
            "orchestrator": [chat(calls=(delegate("c1", "writer", "Draft"),)), chat("Done.")],
            "writer": [chat(blocked)],
        }
    )

    result = await runtime(router).run(orchestrator(), "Go")

    match report(result):
        case {"status": "blocked", "summary": "Tried the KB.", "reason": "No access."}:
            pass
        case other:
            pytest.fail(f"unexpected report: {other}")


async def test_a_blocked_answer_without_a_summary_gives_status_blocked_with_the_reason():
    blocked = json.dumps({"blocked": True, "reason": "No access to the KB."})
    router = Router(
        {
            "orchestrator": [chat(calls=(delegate("c1", "writer", "Draft"),)), chat("Done.")],
            "writer": [chat(blocked)],
        }
    )

    result = await runtime(router).run(orchestrator(), "Go")

    match report(result):
        case {"status": "blocked", "summary": None, "reason": "No access to the KB."} as got if (
            "raw_output" not in got and "error" not in got
        ):
            pass
        case other:
            pytest.fail(f"unexpected report: {other}")


async def test_a_sub_agent_out_of_iterations_gives_status_partial_and_a_closed_context():
    short = Agent(name="researcher", model="local:researcher", tools=[search], max_iterations=1)
    router = Router(
        {
            "orchestrator": [chat(calls=(delegate("c1", "researcher", "Find"),)), chat("Done.")],
            "researcher": [chat(calls=(("s1", "search", {"query": "a"}),))],
        }
    )

    result = await runtime(router).run(orchestrator(SubAgent(short, id="researcher")), "Go")

    match report(result):
        case {"status": "partial", "error": str(error), "tool_calls": 1}:
            assert "used its 1 iterations" in error
        case other:
            pytest.fail(f"unexpected report: {other}")
    stored = result.context.iterations[0].metadata["subagents"]["researcher"]["context"]
    match AgentContext.model_validate(stored):
        case AgentContext(
            iterations=[Iteration(number=1, messages=[*_, Message(role="tool", is_error=True)])]
        ):
            pass
        case unclosed:
            pytest.fail(f"the unanswered call was not closed: {unclosed}")


class BrokenProvider:
    """A provider whose every call fails, as an outage would."""

    codec: Codec = openai_chat

    async def send(self, body: Mapping[str, Any]) -> dict[str, Any]:
        raise ConnectionError("provider unreachable")


async def test_a_sub_agent_whose_provider_fails_gives_status_failed_and_the_parent_goes_on():
    broken = Agent(name="writer", model="broken:writer")
    router = Router(
        {"orchestrator": [chat(calls=(delegate("c1", "writer", "Draft"),)), chat("Sorry.")]}
    )
    rt = AgentRuntime(
        clock=StepClock(),
        ids=SequentialIds(),
        providers={"local": router, "broken": BrokenProvider()},
    )

    result = await rt.run(orchestrator(SubAgent(broken, id="writer")), "Go")

    match result.context.iterations[0].messages[-1]:
        case Message(role="tool", is_error=True, content=str(text)):
            assert json.loads(text)["error"] == "ConnectionError: provider unreachable"
            assert json.loads(text)["status"] == "failed"
        case other:
            pytest.fail(f"unexpected tool message: {other}")
    assert result.output == "Sorry."


async def test_invalid_delegation_arguments_give_an_error_result():
    router = Router(
        {
            "orchestrator": [chat(calls=(("c1", "writer", {"goal": "Draft"}),)), chat("Done.")],
        }
    )

    result = await runtime(router).run(orchestrator(), "Go")

    match result.context.iterations[0].messages[-1]:
        case Message(role="tool", is_error=True, content=str(text)):
            assert text.startswith("Invalid arguments for writer:")
        case other:
            pytest.fail(f"unexpected tool message: {other}")
    assert "writer" not in router.sent


async def test_a_replaced_sub_agent_answers_like_a_replaced_tool():
    fakes = FakeTools()
    fakes.replace("writer", {"status": "completed", "summary": "canned"})
    router = Router(
        {"orchestrator": [chat(calls=(delegate("c1", "writer", "Draft"),)), chat("Done.")]}
    )

    result = await runtime(router, tool_overrides=fakes).run(orchestrator(), "Go")

    assert report(result) == {"status": "completed", "summary": "canned"}
    assert [call.name for call in fakes.calls] == ["writer"]


async def test_the_runtime_keeps_only_the_top_level_run_in_results():
    router = Router(
        {
            "orchestrator": [chat(calls=(delegate("c1", "writer", "Draft"),)), chat("Done.")],
            "writer": [chat(DONE)],
        }
    )
    rt = runtime(router)

    result = await rt.run(orchestrator(), "Go")

    assert rt.results == [result]


async def test_run_stats_sum_the_parent_and_its_sub_agents():
    router = Router(
        {
            "orchestrator": [
                chat(calls=(delegate("c1", "researcher", "Find"),), usage=(100, 10)),
                chat("Done.", usage=(200, 20)),
            ],
            "researcher": [
                chat(calls=(("s1", "search", {"query": "a"}),), usage=(30, 3)),
                chat(DONE, usage=(40, 4)),
            ],
        }
    )

    result = await runtime(router).run(orchestrator(), "Go")

    stats = run_stats(result)
    assert (stats.iterations, stats.tool_calls, stats.input_tokens, stats.output_tokens) == (
        4,
        2,
        370,
        37,
    )


async def test_a_sub_agents_missing_tool_call_ids_come_from_ids_prefixed_with_its_id():
    call = {"type": "function", "function": {"name": "search", "arguments": '{"query": "a"}'}}
    no_id = chat()
    no_id["choices"][0]["message"]["tool_calls"] = [call]
    router = Router(
        {
            "orchestrator": [chat(calls=(delegate("c1", "researcher", "Find"),)), chat("Done.")],
            "researcher": [no_id, chat(DONE)],
        }
    )

    result = await runtime(router).run(orchestrator(), "Go")

    ((_, sub),) = nested_runs(result)
    assert [c.id for c in sub.all_tool_calls] == ["researcher_call_1"]


async def test_the_sub_agents_artifacts_created_and_modified_are_reported(tmp_path: Path):
    store = LocalArtifactStore(tmp_path)
    store.write("notes/old.md", "old")
    scribe = Agent(name="scribe", model="local:scribe", tools=[write_artifact])
    router = Router(
        {
            "orchestrator": [chat(calls=(delegate("c1", "scribe", "Write"),)), chat("Done.")],
            "scribe": [
                chat(
                    calls=(
                        ("w1", "write_artifact", {"path": "notes/new.md", "content": "new"}),
                        ("w2", "write_artifact", {"path": "notes/old.md", "content": "newer"}),
                    )
                ),
                chat(DONE),
            ],
        }
    )

    result = await runtime(router, artifacts=store).run(orchestrator(scribe.as_tool()), "Go")

    assert report(result)["artifacts"] == {
        "created": ["notes/new.md"],
        "modified": ["notes/old.md"],
    }
    assert store.read("notes/new.md") == "new"


async def test_two_delegations_to_one_sub_agent_in_one_step_refuse_the_second():
    router = Router(
        {
            "orchestrator": [
                chat(calls=(delegate("c1", "writer", "Draft A"), delegate("c2", "writer", "B"))),
                chat("Done."),
            ],
            "writer": [chat(DONE)],
        }
    )

    result = await runtime(router).run(orchestrator(), "Go")

    match result.context.iterations[0].messages[-2:]:
        case [
            Message(role="tool", tool_call_id="c1", is_error=False),
            Message(role="tool", tool_call_id="c2", is_error=True, content=str(text)),
        ]:
            assert "already has a task in this step" in text
        case other:
            pytest.fail(f"unexpected tool messages: {other}")


# -- resumption ----------------------------------------------------------------------------


def resumed_script() -> Router:
    return Router(
        {
            "orchestrator": [
                chat(calls=(delegate("c1", "writer", "Draft the intro"),)),
                chat(calls=(delegate("c2", "writer", "Now the ending"),)),
                chat("Done."),
            ],
            "writer": [
                chat(json.dumps({"summary": "Intro drafted."})),
                chat(json.dumps({"summary": "Ending drafted."})),
            ],
        }
    )


async def test_delegating_again_to_the_same_id_resumes_the_sub_agents_context():
    router = resumed_script()

    result = await runtime(router).run(orchestrator(), "Write it")

    match router.sent["writer"][1]["messages"]:
        case [
            {"role": "system"},
            {"role": "user", "content": "Draft the intro"},
            {"role": "assistant", "content": str()},
            {"role": "user", "content": "Now the ending"},
        ]:
            pass
        case other:
            pytest.fail(f"the second delegation did not resume: {other}")
    assert report(result, iteration=1)["resumed"] is True


async def test_a_resumed_delegation_stores_only_the_iterations_it_added():
    result = await runtime(resumed_script()).run(orchestrator(), "Write it")

    stored = [
        it.metadata["subagents"]["writer"]["context"]
        for it in result.context.iterations
        if "subagents" in it.metadata
    ]
    assert [[it["number"] for it in ctx["iterations"]] for ctx in stored] == [[1], [2]]
    assert run_stats(result).iterations == 3 + 2


async def test_continuing_the_conversation_resumes_its_sub_agents():
    router = Router(
        {
            "orchestrator": [
                chat(calls=(delegate("c1", "writer", "Draft"),)),
                chat("Drafted."),
                chat(calls=(delegate("c2", "writer", "Shorter"),)),
                chat("Shortened."),
            ],
            "writer": [chat(DONE), chat(DONE)],
        }
    )
    rt = runtime(router)
    first = await rt.run(orchestrator(), "Draft it")

    second = await rt.continue_conversation(first, "Make it shorter")

    assert len(router.sent["writer"][1]["messages"]) == 4
    assert report(second, iteration=2)["resumed"] is True


async def test_a_saved_and_loaded_run_resumes_its_sub_agents(tmp_path: Path):
    router = Router(
        {
            "orchestrator": [
                chat(calls=(delegate("c1", "writer", "Draft"),)),
                chat("Drafted."),
                chat(calls=(delegate("c2", "writer", "Shorter"),)),
                chat("Shortened."),
            ],
            "writer": [chat(DONE), chat(DONE)],
        }
    )
    rt = runtime(router)
    save_run(tmp_path / "run.json", await rt.run(orchestrator(), "Draft it"))

    loaded = load_run(tmp_path / "run.json", orchestrator())
    second = await rt.continue_conversation(loaded, "Make it shorter")

    assert len(router.sent["writer"][1]["messages"]) == 4
    assert report(second, iteration=2)["resumed"] is True


async def test_a_new_run_starts_its_sub_agents_afresh():
    router = Router(
        {
            "orchestrator": [
                chat(calls=(delegate("c1", "writer", "Draft"),)),
                chat("Drafted."),
                chat(calls=(delegate("c2", "writer", "Draft"),)),
                chat("Drafted."),
            ],
            "writer": [chat(DONE), chat(DONE)],
        }
    )
    rt = runtime(router)
    await rt.run(orchestrator(), "Draft it")

    second = await rt.run(orchestrator(), "Draft it again")

    assert len(router.sent["writer"][1]["messages"]) == 2
    assert report(second)["resumed"] is False


# -- concurrency ---------------------------------------------------------------------------


def parallel_script(yields: Mapping[str, int] | None = None) -> Router:
    return Router(
        {
            "orchestrator": [
                chat(calls=(delegate("c1", "researcher", "Find"), delegate("c2", "writer", "W"))),
                chat("Done."),
            ],
            "researcher": [chat(calls=(("s1", "search", {"query": "a"}),)), chat(DONE)],
            "writer": [chat(DONE)],
        },
        yields,
    )


async def test_independent_delegations_in_one_step_run_concurrently():
    router = parallel_script({"researcher": 5})

    await runtime(router).run(orchestrator(), "Go")

    # the researcher's first call was sent first but answered after the writer's
    assert router.order[1:4] == ["writer", "researcher", "researcher"]


@pytest.mark.parametrize(
    "schedules",
    [[{}, {"researcher": 5}, {"writer": 5, "orchestrator": 2}]],
    ids=["three-schedules"],
)
async def test_concurrent_delegations_give_the_same_context_bytes_on_three_runs(schedules):
    dumps = []
    orders = []
    for yields in schedules:
        router = parallel_script(yields)
        result = await runtime(router).run(orchestrator(), "Go")
        dumps.append(result.context.model_dump_json())
        orders.append(router.order)

    assert len(set(map(tuple, orders))) > 1, "the schedules should differ"
    assert dumps[0] == dumps[1] == dumps[2]


async def test_each_sub_agent_has_its_own_clock_starting_when_it_was_called():
    result = await runtime(parallel_script({"researcher": 5})).run(orchestrator(), "Go")

    contexts = {path.split(".")[-2]: sub for path, sub in nested_runs(result)}
    match contexts:
        case {
            "researcher": AgentContext(iterations=[Iteration(started_at=r_start), *_]),
            "writer": AgentContext(iterations=[Iteration(started_at=w_start)]),
        }:
            assert (r_start.second, w_start.second) == (2, 3)
        case other:
            pytest.fail(f"unexpected nested runs: {other}")


async def test_the_metadata_keeps_usage_and_model_in_sub_agent_iterations():
    result = await runtime(parallel_script()).run(orchestrator(), "Go")

    assert matches(
        result.context.iterations[0].metadata["subagents"]["writer"]["context"],
        {"iterations": [{"metadata": {"model": ANY, "usage": {"input_tokens": 10}}}]},
    )


async def test_a_delegation_is_recorded_in_the_fake_tools_ledger():
    fakes = FakeTools()

    await runtime(parallel_script(), tool_overrides=fakes).run(orchestrator(), "Go")

    assert [(c.name, c.iteration) for c in fakes.calls] == [
        ("researcher", 1),
        ("writer", 1),
        ("search", 1),
    ]


async def test_tool_calls_of_a_delegation_keep_their_given_ids():
    result = await runtime(parallel_script()).run(orchestrator(), "Go")

    assert result.context.iterations[0].tool_calls == [
        ToolCall(id="c1", name="researcher", arguments={"task": "Find"}),
        ToolCall(id="c2", name="writer", arguments={"task": "W"}),
    ]
