"""Async unit tests of the weather agent, offline, for both providers.

``fake_llm`` scripts the model's replies and serves them in the real wire format, so the
real openai / anthropic SDK parses them; ``agent_runtime`` has a stepping clock and
sequential ids, so every run gives the same context.
"""

from __future__ import annotations

import pytest
from weather_agent import WeatherService, weather_agent

from pytest_agentctx import (
    AgentContext,
    AgentRuntime,
    FakeLLM,
    FakeToolCall,
    Iteration,
    Like,
    MaxIterationsExceeded,
    Message,
    Nowhere,
    Regex,
    SequentialIds,
    StepClock,
    ToolCall,
    Trajectory,
    matches,
)

MODELS = ["openai:gpt-4o-mini", "anthropic:claude-haiku-4-5"]


@pytest.fixture
def deps() -> dict[str, WeatherService]:
    return {"weather": WeatherService()}


@pytest.mark.parametrize("model", MODELS)
async def test_agent_calls_both_tools_then_answers(agent_runtime, fake_llm, deps, model):
    fake_llm.reply(
        tool_calls=[("get_weather", {"city": "Paris"}), ("get_local_time", {"city": "Paris"})]
    ).reply("It is 18°C in Paris and 01:00 local time.")

    result = await agent_runtime.run(weather_agent(model), "Weather and time in Paris?", deps=deps)

    match result.context:
        case AgentContext(
            iterations=[
                Iteration(
                    number=1,
                    tool_calls=[
                        ToolCall("get_weather", {"city": "Paris"}),
                        ToolCall("get_local_time"),
                    ],
                ),
                Iteration(number=2, tool_calls=[]),
            ]
        ):
            pass
        case _:
            pytest.fail(f"unexpected trajectory: {result.context.all_tool_calls}")
    assert result.output == "It is 18°C in Paris and 01:00 local time."


@pytest.mark.parametrize("model", MODELS)
async def test_tool_results_reach_the_model(agent_runtime, fake_llm, deps, model):
    fake_llm.reply_tool_call("get_weather", city="Oslo", unit="fahrenheit").reply("39°F.")

    await agent_runtime.run(weather_agent(model), "How cold is Oslo in F?", deps=deps)

    second_request = fake_llm.requests[1]
    match second_request.messages[-1]:
        case {"role": "tool", "content": "39°F in Oslo"}:
            pass
        case other:
            pytest.fail(f"the model did not receive the tool result: {other}")


@pytest.mark.parametrize("model", MODELS)
async def test_unknown_city_is_fed_back_as_a_tool_error(agent_runtime, fake_llm, deps, model):
    fake_llm.reply_tool_call("get_weather", city="Atlantis").reply("I have no data there.")

    result = await agent_runtime.run(weather_agent(model), "Weather in Atlantis?", deps=deps)

    match result.context.get_iteration_messages(1)[-1]:
        case Message(role="tool", is_error=True, content=str(text)) if "Atlantis" in text:
            pass
        case other:
            pytest.fail(f"expected an error result for Atlantis, got {other!r}")


async def test_usage_and_model_are_recorded_per_iteration(agent_runtime, fake_llm, deps):
    fake_llm.reply_tool_call("get_weather", city="Cairo").reply(
        "31°C in Cairo.", usage={"input_tokens": 120, "output_tokens": 9}
    )

    result = await agent_runtime.run(weather_agent(), "Cairo?", deps=deps)

    match result.context.iterations[-1].metadata:
        case {
            "provider": "openai",
            "model": "gpt-4o-mini",
            "usage": {"input_tokens": 120, "output_tokens": 9, "total_tokens": 129},
        }:
            pass
        case other:
            pytest.fail(f"unexpected metadata: {other}")


async def test_replaced_tool_answers_and_is_recorded(agent_runtime, fake_llm, fake_tools, deps):
    fake_tools.replace("get_weather", "-40°C in Paris")
    fake_llm.reply_tool_call("get_weather", city="Paris").reply("Very cold.")

    await agent_runtime.run(weather_agent(), "Paris?", deps=deps)

    match fake_tools.calls:
        case [FakeToolCall(name="get_weather", arguments={"city": "Paris"}, iteration=1)]:
            pass
        case other:
            pytest.fail(f"unexpected ledger: {other}")


async def test_agent_that_never_stops_hits_max_iterations(agent_runtime, fake_llm, deps):
    for _ in range(2):
        fake_llm.reply_tool_call("get_weather", city="Paris")

    with pytest.raises(MaxIterationsExceeded) as excinfo:
        await agent_runtime.run(weather_agent(max_iterations=2), "Loop forever", deps=deps)

    assert excinfo.value.context.current_iteration == 2


async def run_once(model: str) -> str:
    """One run with a fresh deterministic runtime and a fresh scripted model."""
    runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds())
    with FakeLLM() as fake:
        fake.reply_tool_call("get_weather", city="Paris").reply("18°C in Paris.")
        result = await runtime.run(
            weather_agent(model), "Paris?", deps={"weather": WeatherService()}
        )
        fake.verify()
    return result.context.model_dump_json()


@pytest.mark.parametrize("model", MODELS)
async def test_two_runs_give_byte_identical_contexts(monkeypatch, model):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    first = await run_once(model)
    second = await run_once(model)

    assert first == second


async def test_run_matches_the_expected_shape(agent_runtime, fake_llm, deps):
    fake_llm.reply(
        tool_calls=[("get_weather", {"city": "Paris"}), ("get_local_time", {"city": "Paris"})]
    ).reply("It is 18°C in Paris and 01:00 local time.")

    result = await agent_runtime.run(weather_agent(), "Weather and time in Paris?", deps=deps)

    assert matches(
        result.context,
        {
            "iterations": [
                {
                    "messages": [
                        ...,
                        {"role": "tool", "name": "get_weather", "content": "18°C in Paris"},
                        {"role": "tool", "content": Regex(r"^\d\d:\d\d in Paris$")},
                    ]
                },
                {"messages": [{"role": "assistant", "content": Regex("18°C")}]},
            ],
            "final_output": Regex("Paris"),
        },
    )
    assert matches(result.context, Nowhere(Like(Message, is_error=True)))


async def test_both_tools_are_called_in_either_order(agent_runtime, fake_llm, deps):
    fake_llm.reply(
        tool_calls=[
            ("get_local_time", {"city": "Oslo"}),
            ("get_weather", {"city": "Oslo", "unit": "celsius"}),
        ]
    ).reply("4°C in Oslo, 01:00 local time.")

    result = await agent_runtime.run(weather_agent(), "Oslo: weather and time?", deps=deps)

    assert result.context == Trajectory(
        [("get_weather", {"city": "Oslo"}), ("get_local_time", {"city": "Oslo"})],
        mode="unordered",
        args="superset",
    )


async def test_paris_run_matches_its_snapshot(agent_runtime, fake_llm, deps, agent_snapshot):
    fake_llm.reply(tool_calls=[("get_weather", {"city": "Paris"})]).reply("18°C in Paris.")

    result = await agent_runtime.run(weather_agent(), "Weather in Paris?", deps=deps)

    assert result.context == agent_snapshot
