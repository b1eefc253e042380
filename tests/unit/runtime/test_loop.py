"""Unit tests of pytest_agentctx.runtime.agent and .loop: Agent definitions and the run loop.

Runs go through the real ``openai``/``anthropic`` SDKs, answered by :class:`FakeLLM` at the
HTTP transport; the runtime has a :class:`StepClock` and :class:`SequentialIds`, so every
context is known to the byte.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import openai
import pytest

from pytest_agentctx.context.clock import StepClock
from pytest_agentctx.context.model import (
    INVALID_ARGUMENTS_KEY,
    AgentContext,
    Iteration,
    Message,
    ToolCall,
    ToolResult,
)
from pytest_agentctx.doubles.fake_llm import FakeLLM
from pytest_agentctx.doubles.fake_tools import FakeToolCall, FakeTools
from pytest_agentctx.doubles.ids import SequentialIds
from pytest_agentctx.exceptions import AgentCtxError
from pytest_agentctx.runtime.agent import Agent, RunResult
from pytest_agentctx.runtime.artifacts import LocalArtifactStore
from pytest_agentctx.runtime.errors import (
    AgentDefinitionError,
    ConversationError,
    MaxIterationsExceeded,
    ProviderError,
)
from pytest_agentctx.runtime.loop import AgentRuntime
from pytest_agentctx.runtime.providers import (
    AnthropicMessagesProvider,
)
from pytest_agentctx.runtime.tools import RunContext, Tool, tool
from pytest_agentctx.runtime.window import ContextWindow
from pytest_agentctx.traffic.codecs import Codec, openai_chat, openai_responses

T0 = datetime(2025, 1, 1, tzinfo=UTC)
SYSTEM = "You answer weather questions."
QUESTION = "Weather in Paris?"


def at(seconds: int) -> datetime:
    """The StepClock's instant after ``seconds`` reads."""
    return T0 + timedelta(seconds=seconds)


@tool
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city's name.
    """
    return f"18 degrees celsius in {city}"


@tool
async def get_time(city: str) -> str:
    """Local time in a city."""
    return f"01:00 in {city}"


# Per provider: model, id of the fake's first tool call, stop reasons (tool call, answer).
PROVIDERS = [
    pytest.param("openai:gpt-4o-mini", "call_1", "tool_calls", "stop", id="openai"),
    pytest.param("anthropic:claude-haiku-4-5", "toolu_1", "tool_use", "end_turn", id="anthropic"),
]
MODELS = [
    pytest.param("openai:gpt-4o-mini", id="openai"),
    pytest.param("anthropic:claude-haiku-4-5", id="anthropic"),
]
ALL_MODELS = [*MODELS, pytest.param("openai-responses:gpt-4.1-mini", id="openai-responses")]


def weather_agent(model: str = "openai:gpt-4o-mini", **options: Any) -> Agent:
    options.setdefault("tools", [get_weather, get_time])
    return Agent(name="weather", model=model, system_prompt=SYSTEM, **options)


def script_weather(fake: FakeLLM) -> None:
    fake.reply(
        tool_calls=[("get_weather", {"city": "Paris"})],
        usage={"input_tokens": 50, "output_tokens": 10},
    ).reply("Sunny, 18 degrees in Paris.", usage={"input_tokens": 80, "output_tokens": 8})


class CannedProvider:
    """A provider without an SDK: answers with chat completions bodies, in order."""

    codec: Codec = openai_chat

    def __init__(self, *bodies: dict[str, Any]) -> None:
        self.bodies = list(bodies)
        self.sent: list[Mapping[str, Any]] = []

    async def send(self, body: Mapping[str, Any]) -> dict[str, Any]:
        self.sent.append(body)
        return self.bodies.pop(0)


def chat_body(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "local-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


# -- Agent ---------------------------------------------------------------------------


def test_agent_wraps_plain_functions_as_tools():
    def get_forecast(city: str, days: int = 3) -> str:
        """Forecast for a city."""
        return "sunny"

    # a plain function where a Tool is expected, on purpose: the agent wraps it
    agent = Agent(
        name="weather",
        model="openai:gpt-4o-mini",
        tools=[get_weather, get_forecast],  # type: ignore[list-item]
    )

    match agent.tools:
        case (
            Tool(name="get_weather"),
            Tool(name="get_forecast", description="Forecast for a city."),
        ):
            pass
        case _:
            pytest.fail(f"tools not wrapped: {agent.tools!r}")


def test_agent_splits_its_model_into_provider_and_model_name():
    agent = Agent(name="weather", model="anthropic:claude-haiku-4-5")

    assert (agent.provider_name, agent.model_name) == ("anthropic", "claude-haiku-4-5")


def test_agent_get_tool_finds_a_tool_by_name():
    agent = weather_agent()

    assert (agent.get_tool("get_time"), agent.get_tool("book_flight")) == (get_time, None)


@pytest.mark.parametrize("name", ["", None, 42])
def test_agent_needs_a_name(name):
    with pytest.raises(AgentDefinitionError, match=r"give the agent a non-empty name"):
        Agent(name=name, model="openai:gpt-4o-mini")


@pytest.mark.parametrize("model", ["gpt-4o-mini", "openai:", ":gpt-4o-mini"])
def test_agent_model_must_name_its_provider(model):
    with pytest.raises(
        AgentDefinitionError,
        match=rf"^Agent 'weather': Model {model!r} does not name its provider; expected "
        r"'PROVIDER:MODEL'",
    ):
        Agent(name="weather", model=model)


@pytest.mark.parametrize("max_iterations", [0, -1, True, 2.5, "3", None])
def test_agent_max_iterations_must_be_a_whole_number_of_at_least_one(max_iterations):
    with pytest.raises(
        AgentDefinitionError,
        match=rf"^Agent 'weather': max_iterations={max_iterations!r}; expected a whole number "
        r"of at least 1\.$",
    ):
        Agent(name="weather", model="openai:gpt-4o-mini", max_iterations=max_iterations)


def test_agent_refuses_two_tools_with_one_name():
    @tool(name="get_weather")
    def other_weather(city: str) -> str:
        return "rainy"

    with pytest.raises(
        AgentDefinitionError,
        match=r"^Agent 'weather' has two tools called \['get_weather'\]; every tool needs its "
        r"own name \(pass @tool\(name='\.\.\.'\) to rename one\)\.$",
    ):
        Agent(name="weather", model="openai:gpt-4o-mini", tools=[get_weather, other_weather])


# -- a run through each SDK ----------------------------------------------------------


@pytest.mark.parametrize(("model", "call_id", "tool_stop", "final_stop"), PROVIDERS)
async def test_a_run_with_a_tool_call_gives_the_whole_context(
    fake, runtime, model, call_id, tool_stop, final_stop
):
    script_weather(fake)
    provider, model_name = model.split(":")
    call = ToolCall(id=call_id, name="get_weather", arguments={"city": "Paris"})

    result = await runtime.run(weather_agent(model), QUESTION)

    assert result.context == AgentContext(
        iterations=[
            Iteration(
                number=1,
                messages=[
                    Message(role="system", content=SYSTEM),
                    Message(role="user", content=QUESTION),
                    Message(role="assistant", content=None, tool_calls=[call]),
                    Message(
                        role="tool",
                        content="18 degrees celsius in Paris",
                        tool_call_id=call_id,
                        name="get_weather",
                    ),
                ],
                tool_calls=[call],
                started_at=at(0),
                completed_at=at(2),
                metadata={
                    "model": model_name,
                    "provider": provider,
                    "stop_reason": tool_stop,
                    "usage": {"input_tokens": 50, "output_tokens": 10, "total_tokens": 60},
                },
            ),
            Iteration(
                number=2,
                messages=[Message(role="assistant", content="Sunny, 18 degrees in Paris.")],
                tool_calls=[],
                started_at=at(2),
                completed_at=at(3),
                metadata={
                    "model": model_name,
                    "provider": provider,
                    "stop_reason": final_stop,
                    "usage": {"input_tokens": 80, "output_tokens": 8, "total_tokens": 88},
                },
            ),
        ],
        current_iteration=2,
        created_at=at(0),
        updated_at=at(3),
    )


@pytest.mark.parametrize("model", MODELS)
async def test_a_run_returns_the_final_answer_and_the_number_of_iterations(fake, runtime, model):
    script_weather(fake)
    agent = weather_agent(model)

    result = await runtime.run(agent, QUESTION)

    match result:
        case RunResult(agent=run_agent, output="Sunny, 18 degrees in Paris.", iterations=2):
            assert run_agent is agent
        case _:
            pytest.fail(f"unexpected result: {result!r}")


@pytest.mark.parametrize("model", MODELS)
async def test_the_second_model_call_sends_the_conversation_with_the_tool_result(
    fake, runtime, model
):
    script_weather(fake)

    await runtime.run(weather_agent(model), QUESTION)

    call_id = "call_1" if model.startswith("openai") else "toolu_1"
    assert fake.requests[1].messages == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": call_id, "name": "get_weather", "arguments": {"city": "Paris"}}],
        },
        {"role": "tool", "content": "18 degrees celsius in Paris", "tool_call_id": call_id},
    ]


async def test_a_run_sends_the_agents_tools_max_tokens_and_temperature(fake, runtime):
    fake.reply("Sunny.")

    await runtime.run(weather_agent(max_tokens=100, temperature=0.0), QUESTION)

    body = fake.calls[0].body
    assert (body["max_completion_tokens"], body["temperature"]) == (100, 0.0)
    assert [spec["name"] for spec in fake.requests[0].tools] == ["get_weather", "get_time"]


async def test_iteration_metadata_holds_model_provider_usage_and_stop_reason(fake, runtime):
    fake.reply("Sunny.", model="claude-haiku-4-5-20251001")

    result = await runtime.run(weather_agent("anthropic:claude-haiku-4-5"), QUESTION)

    match result.context.iterations[0].metadata:
        case {
            "model": "claude-haiku-4-5-20251001",
            "provider": "anthropic",
            "stop_reason": "end_turn",
            "usage": {"input_tokens": int(), "output_tokens": int(), "total_tokens": int()},
        }:
            pass
        case metadata:
            pytest.fail(f"unexpected metadata: {metadata}")


async def test_timestamps_come_from_the_runtime_clock(fake, runtime):
    script_weather(fake)

    result = await runtime.run(weather_agent(), QUESTION)

    assert [(it.started_at, it.completed_at) for it in result.context.iterations] == [
        (at(0), at(2)),
        (at(2), at(3)),
    ]


async def test_an_answer_without_tools_completes_the_first_iteration(fake, runtime):
    fake.reply("Sunny.")

    result = await runtime.run(weather_agent(), QUESTION)

    match result.context:
        case AgentContext(
            iterations=[
                Iteration(
                    number=1,
                    messages=[Message("system"), Message("user"), Message("assistant", "Sunny.")],
                    tool_calls=[],
                    completed_at=completed,
                )
            ],
            current_iteration=1,
        ) if completed is not None:
            pass
        case _:
            pytest.fail(f"unexpected context: {result.context!r}")


async def test_parallel_tool_calls_run_in_order_and_answer_in_one_iteration(fake, runtime):
    fake.reply(
        tool_calls=[("get_weather", {"city": "Paris"}), ("get_time", {"city": "Paris"})]
    ).reply("18 degrees, 01:00.")

    result = await runtime.run(weather_agent(), QUESTION)

    assert [m.to_dict() for m in result.context.iterations[0].messages if m.role == "tool"] == [
        {
            "role": "tool",
            "content": "18 degrees celsius in Paris",
            "tool_call_id": "call_1",
            "name": "get_weather",
        },
        {
            "role": "tool",
            "content": "01:00 in Paris",
            "tool_call_id": "call_2",
            "name": "get_time",
        },
    ]


async def test_two_runs_give_byte_identical_contexts(providers):
    dumps = []
    for _ in range(2):
        runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds(), providers=providers)
        with FakeLLM() as fake:
            fake.reply(tool_calls=[("get_weather", {"city": "Paris"})]).reply("Sunny.")
            result = await runtime.run(weather_agent(), QUESTION)
        dumps.append(result.context.model_dump_json())

    assert dumps[0] == dumps[1]


# -- tool failures become error results ----------------------------------------------


async def test_a_tool_that_raises_gives_an_error_result_to_the_model(fake, runtime):
    @tool
    def get_weather(city: str) -> str:
        raise ConnectionError("weather service down")

    fake.reply_tool_call("get_weather", city="Paris").reply("The weather service is down.")

    result = await runtime.run(
        weather_agent("anthropic:claude-haiku-4-5", tools=[get_weather]), QUESTION
    )

    assert result.context.iterations[0].messages[-1] == Message(
        role="tool",
        content="Tool get_weather failed: ConnectionError: weather service down",
        tool_call_id="toolu_1",
        name="get_weather",
        is_error=True,
    )
    assert fake.requests[1].messages[-1] == {
        "role": "tool",
        "content": "Tool get_weather failed: ConnectionError: weather service down",
        "tool_call_id": "toolu_1",
        "is_error": True,
    }
    assert result.output == "The weather service is down."


async def test_an_unknown_tool_gives_an_error_result_listing_the_tools(fake, runtime):
    fake.reply_tool_call("get_wether", city="Paris").reply("Sorry.")

    result = await runtime.run(weather_agent(), QUESTION)

    assert result.context.iterations[0].messages[-1] == Message(
        role="tool",
        content="Unknown tool 'get_wether'. Available tools: get_weather, get_time.",
        tool_call_id="call_1",
        name="get_wether",
        is_error=True,
    )


async def test_an_unknown_tool_of_an_agent_without_tools_says_there_are_none(fake, runtime):
    fake.reply_tool_call("get_weather", city="Paris").reply("Sorry.")

    result = await runtime.run(weather_agent(tools=[]), QUESTION)

    assert result.context.iterations[0].messages[-1].content == (
        "Unknown tool 'get_weather'. Available tools: none."
    )


async def test_arguments_that_fail_validation_give_an_error_result(fake, runtime):
    fake.reply_tool_call("get_weather", town="Paris").reply("Sorry.")

    result = await runtime.run(weather_agent(), QUESTION)

    assert result.context.iterations[0].messages[-1].to_dict() == {
        "role": "tool",
        "content": "Invalid arguments for get_weather: city: Field required; "
        "town: Extra inputs are not permitted",
        "tool_call_id": "call_1",
        "name": "get_weather",
        "is_error": True,
    }


async def test_arguments_that_are_not_valid_json_give_an_error_result(fake, runtime):
    raw = '{"city": "Par'
    fake.reply(
        tool_calls=[ToolCall(id="", name="get_weather", arguments={INVALID_ARGUMENTS_KEY: raw})]
    ).reply("Sorry.")

    result = await runtime.run(weather_agent(), QUESTION)

    assert result.context.iterations[0].messages[-1].to_dict() == {
        "role": "tool",
        "content": "Invalid arguments for get_weather: the arguments were not valid JSON: "
        f"{raw!r}; send a JSON object that matches the tool's schema",
        "tool_call_id": "call_1",
        "name": "get_weather",
        "is_error": True,
    }


# -- max_iterations ------------------------------------------------------------------


async def test_max_iterations_exceeded_carries_the_context_of_the_run(fake, runtime):
    fake.reply_tool_call("get_weather", city="Paris").reply_tool_call("get_weather", city="Lyon")

    with pytest.raises(
        MaxIterationsExceeded,
        match=r"^Agent 'weather' used its 2 iterations and still asked for tools \(get_weather\) "
        r"in iteration 2\. Raise Agent\(max_iterations=\.\.\.\)",
    ) as raised:
        await runtime.run(weather_agent(max_iterations=2), QUESTION)

    assert raised.value.max_iterations == 2
    match raised.value.context:
        case AgentContext(
            iterations=[
                Iteration(number=1, tool_calls=[ToolCall("get_weather", {"city": "Paris"})]),
                Iteration(
                    number=2,
                    tool_calls=[ToolCall("get_weather", {"city": "Lyon"})],
                    completed_at=None,
                ),
            ],
            current_iteration=2,
        ):
            pass
        case context:
            pytest.fail(f"unexpected context: {context!r}")


async def test_max_iterations_one_allows_only_a_direct_answer(fake, runtime):
    fake.reply_tool_call("get_weather", city="Paris")

    with pytest.raises(MaxIterationsExceeded, match=r"used its 1 iterations"):
        await runtime.run(weather_agent(max_iterations=1), QUESTION)


# -- RunContext ----------------------------------------------------------------------


async def test_tools_receive_a_run_context_with_agent_actor_tenant_and_deps(fake, runtime):
    seen: list[RunContext] = []

    @tool
    def whoami(ctx: RunContext) -> str:
        """Who is asking."""
        seen.append(ctx)
        return "alice"

    agent = weather_agent(tools=[whoami])
    database = object()
    fake.reply_tool_call("whoami").reply("You are alice.")

    await runtime.run(agent, "Who am I?", actor="alice", tenant="acme", deps={"db": database})

    match seen:
        case [
            RunContext(
                agent=run_agent,
                iteration=1,
                tool_call=ToolCall("whoami", {}, "call_1"),
                clock=clock,
                ids=ids,
                actor="alice",
                tenant="acme",
                deps={"db": db},
            )
        ]:
            assert (run_agent, clock, ids, db) == (agent, runtime.clock, runtime.ids, database)
        case _:
            pytest.fail(f"unexpected run context: {seen!r}")


async def test_actor_tenant_and_deps_are_never_stored_on_the_context(fake, runtime):
    @tool
    def whoami(ctx: RunContext) -> str:
        """Who is asking."""
        return "someone"

    fake.reply_tool_call("whoami").reply("Done.")

    result = await runtime.run(
        weather_agent(tools=[whoami]),
        "Who am I?",
        actor="actor-alice",
        tenant="tenant-acme",
        deps={"secret": "deps-value"},
    )

    dumped = result.context.model_dump_json()
    assert [word for word in ("actor-alice", "tenant-acme", "deps-value") if word in dumped] == []


# -- tool_overrides (FakeTools) ------------------------------------------------------


async def test_a_replaced_tool_answers_instead_of_the_real_one(fake, providers):
    real_calls: list[str] = []

    @tool
    def get_weather(city: str) -> str:
        real_calls.append(city)
        return "real"

    fake_tools = FakeTools().replace("get_weather", "rainy")
    runtime = AgentRuntime(
        clock=StepClock(), ids=SequentialIds(), providers=providers, tool_overrides=fake_tools
    )
    fake.reply_tool_call("get_weather", city="Paris").reply("Rainy.")

    result = await runtime.run(weather_agent(tools=[get_weather]), QUESTION)

    assert result.context.iterations[0].messages[-1].content == "rainy"
    assert real_calls == []


async def test_every_tool_call_is_recorded_in_the_ledger_replaced_or_not(fake, providers):
    fake_tools = FakeTools().replace("get_weather", "rainy")
    runtime = AgentRuntime(
        clock=StepClock(), ids=SequentialIds(), providers=providers, tool_overrides=fake_tools
    )
    fake.reply_tool_call("get_weather", city="Paris").reply(
        tool_calls=[("get_time", {"city": "Paris"}), ("book_flight", {"to": "Paris"})]
    ).reply("Done.")

    await runtime.run(weather_agent(), QUESTION)

    assert fake_tools.calls == [
        FakeToolCall("get_weather", {"city": "Paris"}, 1, "call_1", True),
        FakeToolCall("get_time", {"city": "Paris"}, 2, "call_2", False),
        FakeToolCall("book_flight", {"to": "Paris"}, 2, "call_3", False),
    ]


async def test_a_replacement_that_raises_gives_an_error_result(fake, providers):
    fake_tools = FakeTools().replace("get_weather", raises=TimeoutError("service down"))
    runtime = AgentRuntime(
        clock=StepClock(), ids=SequentialIds(), providers=providers, tool_overrides=fake_tools
    )
    fake.reply_tool_call("get_weather", city="Paris").reply("Sorry.")

    result = await runtime.run(weather_agent(), QUESTION)

    assert (
        result.context.iterations[0].messages[-1]
        == ToolResult(
            tool_call_id="call_1",
            name="get_weather",
            content="Tool get_weather failed: TimeoutError: service down",
            is_error=True,
        ).to_message()
    )


async def test_an_async_replacement_is_awaited(fake, providers):
    async def forecast(city: str) -> str:
        return f"async rain in {city}"

    fake_tools = FakeTools().replace("get_weather", fn=forecast)
    runtime = AgentRuntime(
        clock=StepClock(), ids=SequentialIds(), providers=providers, tool_overrides=fake_tools
    )
    fake.reply_tool_call("get_weather", city="Paris").reply("Rainy.")

    result = await runtime.run(weather_agent(), QUESTION)

    assert result.context.iterations[0].messages[-1].content == "async rain in Paris"


async def test_replaced_tools_still_get_their_arguments_validated(fake, providers):
    fake_tools = FakeTools().replace("get_weather", "rainy")
    runtime = AgentRuntime(
        clock=StepClock(), ids=SequentialIds(), providers=providers, tool_overrides=fake_tools
    )
    fake.reply_tool_call("get_weather", town="Paris").reply("Sorry.")

    result = await runtime.run(weather_agent(), QUESTION)

    match result.context.iterations[0].messages[-1]:
        case Message("tool", content, is_error=True) if content.startswith(
            "Invalid arguments for get_weather: city: Field required"
        ):
            pass
        case message:
            pytest.fail(f"unexpected tool message: {message!r}")


# -- providers -----------------------------------------------------------------------


async def test_tool_calls_without_provider_ids_get_ids_from_the_runtime():
    provider = CannedProvider(
        chat_body(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"type": "function", "function": {"name": "get_weather", "arguments": "{}"}},
                    {
                        "id": "",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": '{"city": "Paris"}'},
                    },
                ],
            }
        ),
        chat_body({"role": "assistant", "content": "Done."}),
    )
    runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds(), providers={"local": provider})

    result = await runtime.run(weather_agent("local:local-model"), QUESTION)

    assert [call.id for call in result.context.all_tool_calls] == ["call_1", "call_2"]
    assert [m.tool_call_id for m in result.context.iterations[0].messages if m.role == "tool"] == [
        "call_1",
        "call_2",
    ]


async def test_a_custom_provider_prefix_uses_the_given_provider():
    provider = CannedProvider(chat_body({"role": "assistant", "content": "Hello."}))
    runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds(), providers={"local": provider})

    result = await runtime.run(weather_agent("local:local-model"), QUESTION)

    assert result.output == "Hello."
    assert [body["model"] for body in provider.sent] == ["local-model"]


class ClosingProvider(CannedProvider):
    """A canned provider that counts its aclose() calls."""

    def __init__(self, *bodies: dict[str, Any]) -> None:
        super().__init__(*bodies)
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


async def test_the_runtime_closes_the_provider_at_the_end_of_a_run():
    provider = ClosingProvider(chat_body({"role": "assistant", "content": "Hello."}))
    runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds(), providers={"local": provider})

    await runtime.run(weather_agent("local:local-model"), QUESTION)

    assert provider.closed == 1


async def test_the_runtime_closes_the_provider_when_a_run_fails():
    call = {"type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
    provider = ClosingProvider(
        chat_body({"role": "assistant", "content": None, "tool_calls": [call]})
    )
    runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds(), providers={"local": provider})

    with pytest.raises(MaxIterationsExceeded):
        await runtime.run(weather_agent("local:local-model", max_iterations=1), QUESTION)

    assert provider.closed == 1


def test_provider_for_creates_the_default_provider_once():
    runtime = AgentRuntime()
    agent = weather_agent("anthropic:claude-haiku-4-5")

    first = runtime.provider_for(agent)

    assert isinstance(first, AnthropicMessagesProvider)
    assert runtime.provider_for(agent) is first


async def test_a_run_for_an_unknown_provider_prefix_is_a_provider_error():
    with pytest.raises(ProviderError, match=r"No provider for models 'gemini:\.\.\.'"):
        await AgentRuntime().run(weather_agent("gemini:gemini-2.0-flash"), QUESTION)


async def test_run_refuses_anything_but_an_agent():
    with pytest.raises(
        AgentDefinitionError, match=r"^run\(\) takes an Agent, got str: 'weather'\.$"
    ):
        await AgentRuntime().run("weather", QUESTION)  # type: ignore[arg-type]


async def test_a_run_through_the_openai_responses_api_answers_with_tools(fake, runtime):
    script_weather(fake)

    result = await runtime.run(weather_agent("openai-responses:gpt-4.1-mini"), QUESTION)

    match result.context:
        case AgentContext(
            iterations=[
                Iteration(
                    number=1,
                    tool_calls=[ToolCall("get_weather", {"city": "Paris"}, "call_1")],
                    metadata={"provider": "openai-responses", "stop_reason": "tool_calls"},
                ),
                Iteration(number=2, metadata={"stop_reason": "completed"}),
            ]
        ):
            pass
        case context:
            pytest.fail(f"unexpected context: {context!r}")
    assert result.output == "Sunny, 18 degrees in Paris."


async def test_reasoning_items_of_a_reply_are_kept_on_the_assistant_message():
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
    body = openai_responses.encode_response(
        openai_responses.decode_response(
            {"id": "resp_1", "status": "completed", "model": "o4-mini", "output": []}
        ),
        response_id="resp_1",
    )
    body["output"] = [
        reasoning,
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "42.", "annotations": []}],
        },
    ]
    provider = CannedProvider(body)
    provider.codec = openai_responses
    runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds(), providers={"local": provider})

    result = await runtime.run(weather_agent("local:o4-mini"), "Answer?")

    assert result.context.iterations[0].messages[-1].to_dict() == {
        "role": "assistant",
        "content": "42.",
        "reasoning": [reasoning],
    }


# -- streaming (Agent(stream=True)) --------------------------------------------------


@pytest.mark.parametrize("model", ALL_MODELS)
async def test_a_streamed_run_gives_the_same_context_as_a_plain_one(providers, model):
    dumps = []
    for stream in (False, True):
        runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds(), providers=providers)
        with FakeLLM() as fake:
            script_weather(fake)
            result = await runtime.run(weather_agent(model, stream=stream), QUESTION)
        assert [call.request.stream for call in fake.calls] == [stream, stream]
        dumps.append(result.context.model_dump_json())

    assert dumps[0] == dumps[1]


async def test_a_streamed_openai_chat_run_asks_for_usage_in_the_stream(fake, runtime):
    fake.reply("Sunny.")

    await runtime.run(weather_agent(stream=True), QUESTION)

    assert fake.calls[0].body["stream_options"] == {"include_usage": True}


async def test_streaming_through_a_provider_that_cannot_stream_is_a_provider_error():
    provider = CannedProvider(chat_body({"role": "assistant", "content": "Hello."}))
    runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds(), providers={"local": provider})

    with pytest.raises(
        ProviderError,
        match=r"^The provider for codec 'openai_chat' cannot stream \(it needs send_stream\(\) "
        r"and a codec with decode_stream\(\)\)\. Use Agent\(stream=False\) with it\.$",
    ):
        await runtime.run(weather_agent("local:local-model", stream=True), QUESTION)


# -- context window ------------------------------------------------------------------


def test_agent_window_must_be_a_context_window():
    with pytest.raises(
        AgentDefinitionError,
        match=r"^Agent 'weather': window=8000; expected a ContextWindow, "
        r"e\.g\. ContextWindow\(max_tokens=8000\)\.$",
    ):
        weather_agent(window=8000)


async def test_a_run_with_a_window_records_the_pruning_in_each_iteration(fake, runtime):
    script_weather(fake)

    result = await runtime.run(weather_agent(window=ContextWindow(max_messages=50)), QUESTION)

    match [it.metadata.get("window") for it in result.context.iterations]:
        case [
            {
                "strategy": "oldest_first",
                "dropped": [],
                "messages_before": 2,
                "within_limits": True,
            },
            {"dropped": [], "messages_before": 4, "messages_after": 4},
        ]:
            pass
        case windows:
            pytest.fail(f"unexpected window metadata: {windows}")


async def test_a_window_limits_the_messages_sent_to_the_model(fake, runtime):
    fake.reply("Sunny.").reply("Rainy.")
    agent = weather_agent(window=ContextWindow(max_messages=3))

    await runtime.run_multi_turn(agent, "Weather today?", ["And tomorrow?"])

    # oldest_first drops the oldest unit (the first question) until 3 messages remain, then
    # its answer too, so that the request does not open with the assistant's reply
    assert fake.requests[1].messages == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "And tomorrow?"},
    ]


# -- RunResult and conversations -----------------------------------------------------


async def test_a_completed_run_result_knows_its_input_status_and_that_it_finished(fake, runtime):
    fake.reply("Sunny.")

    result = await runtime.run(weather_agent(), QUESTION)

    assert (result.input, result.status, result.error, result.is_finished) == (
        QUESTION,
        "completed",
        None,
        True,
    )


async def test_max_iterations_exceeded_carries_a_failed_result_that_can_be_continued(fake, runtime):
    fake.reply_tool_call("get_weather", city="Paris")

    with pytest.raises(MaxIterationsExceeded) as raised:
        await runtime.run(weather_agent(max_iterations=1), QUESTION)

    match raised.value.result:
        case RunResult(output=None, status="failed", error=error, context=context) if (
            error == str(raised.value) and context is raised.value.context
        ):
            assert raised.value.result.is_finished
        case result:
            pytest.fail(f"unexpected failed result: {result!r}")


async def test_continue_conversation_adds_a_turn_as_a_new_iteration(fake, runtime):
    fake.reply("Sunny.").reply("Rainy tomorrow.")
    first = await runtime.run(weather_agent(), QUESTION)

    second = await runtime.continue_conversation(first, "And tomorrow?")

    match second.context:
        case AgentContext(
            iterations=[
                Iteration(number=1),
                Iteration(
                    number=2,
                    messages=[
                        Message("user", "And tomorrow?"),
                        Message("assistant", "Rainy tomorrow."),
                    ],
                ),
            ],
            current_iteration=2,
        ):
            pass
        case context:
            pytest.fail(f"unexpected context: {context!r}")
    assert (second.output, len(first.context.iterations)) == ("Rainy tomorrow.", 1)


async def test_continue_conversation_sends_the_whole_conversation(fake, runtime):
    fake.reply("Sunny.").reply("Rainy tomorrow.")
    first = await runtime.run(weather_agent(), QUESTION)

    await runtime.continue_conversation(first, "And tomorrow?")

    assert fake.requests[1].messages == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "And tomorrow?"},
    ]


async def test_continuing_a_failed_run_closes_its_unanswered_tool_calls_first(fake, runtime):
    fake.reply_tool_call("get_weather", city="Paris").reply("Sorry, I ran out of steps.")
    with pytest.raises(MaxIterationsExceeded) as raised:
        await runtime.run(weather_agent(max_iterations=1), QUESTION)

    result = await runtime.continue_conversation(raised.value.result, "Just guess.")

    assert result.context.iterations[0].messages[-1] == Message(
        role="tool",
        content="Not executed: the run stopped at its iteration limit.",
        tool_call_id="call_1",
        name="get_weather",
        is_error=True,
    )
    assert result.context.iterations[1].messages[0] == Message(role="user", content="Just guess.")
    assert result.output == "Sorry, I ran out of steps."


async def test_continuing_a_run_in_progress_is_a_conversation_error(runtime):
    agent = weather_agent()
    unfinished = RunResult(agent=agent, context=AgentContext.new(QUESTION), output=None)

    with pytest.raises(
        ConversationError,
        match=r"^continue_conversation\(\): the run of agent 'weather' is still in progress "
        r"\(iteration 1 has no final answer\)",
    ):
        await runtime.continue_conversation(unfinished, "Hello?")


async def test_continue_conversation_needs_a_run_result(runtime):
    with pytest.raises(
        ConversationError,
        match=r"^continue_conversation\(\) takes the RunResult of an earlier run, got str: "
        r"'Sunny\.'\.$",
    ):
        await runtime.continue_conversation("Sunny.", "And tomorrow?")


async def test_run_multi_turn_runs_each_follow_up_as_a_new_turn(fake, runtime):
    fake.reply("Sunny.").reply("Rainy.").reply("Windy.")

    result = await runtime.run_multi_turn(
        weather_agent(), "Today?", ["Tomorrow?", "The day after?"]
    )

    assert [
        (m.role, m.content)
        for m in result.context.get_all_messages()
        if m.role in ("user", "assistant")
    ] == [
        ("user", "Today?"),
        ("assistant", "Sunny."),
        ("user", "Tomorrow?"),
        ("assistant", "Rainy."),
        ("user", "The day after?"),
        ("assistant", "Windy."),
    ]
    assert (result.output, result.input) == ("Windy.", "Today?")


async def test_max_iterations_counts_the_iterations_of_each_turn(fake, runtime):
    fake.reply_tool_call("get_weather", city="Paris").reply("Sunny.")
    fake.reply_tool_call("get_weather", city="Lyon").reply("Rainy.")

    result = await runtime.run_multi_turn(weather_agent(max_iterations=2), "Paris?", ["And Lyon?"])

    assert (result.output, result.iterations) == ("Rainy.", 4)


# -- run_sync ------------------------------------------------------------------------


async def test_run_sync_runs_the_agent_outside_an_event_loop(fake, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    fake.reply("Sunny.")
    runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds())

    result = await asyncio.to_thread(runtime.run_sync, weather_agent(), QUESTION)

    assert (result.output, result.iterations) == ("Sunny.", 1)


async def test_run_sync_inside_a_running_event_loop_is_an_error():
    with pytest.raises(
        AgentCtxError,
        match=r"^run_sync\(\) was called inside a running event loop, where it would block it\. "
        r"Use `await runtime\.run\(agent, input\)` instead\.$",
    ):
        AgentRuntime().run_sync(weather_agent(), QUESTION)


async def test_runtime_keeps_every_finished_run_in_results(
    runtime: AgentRuntime, fake: FakeLLM
) -> None:
    fake.reply("first").reply("second")
    agent = Agent(name="a", model="openai:gpt-4o-mini")
    one = await runtime.run(agent, "hi")
    two = await runtime.run(agent, "again")
    assert runtime.results == [one, two]


async def test_runtime_results_include_a_run_that_ran_out_of_iterations(
    fake: FakeLLM, runtime: AgentRuntime
) -> None:
    fake.reply_tool_call("get_weather", city="Paris")
    with pytest.raises(MaxIterationsExceeded) as caught:
        await runtime.run(weather_agent(max_iterations=1), QUESTION)
    assert runtime.results == [caught.value.result]


async def test_a_run_stopped_by_a_model_error_is_kept_failed_with_its_context_so_far(
    fake: FakeLLM, runtime: AgentRuntime
) -> None:
    fake.reply_tool_call("get_weather", city="Paris").fail(500, "the model is down")
    with pytest.raises(openai.InternalServerError) as caught:
        await runtime.run(weather_agent(), QUESTION)

    match runtime.results:
        case [RunResult(status="failed", output=None, error=str(error), context=context)]:
            assert error.startswith("InternalServerError: ")
            assert "the model is down" in error
            assert [call.name for call in context.all_tool_calls] == ["get_weather"]
            assert len(context.iterations) == 2  # the second call failed: no answer
            assert not context.iterations[-1].is_complete
        case other:
            raise AssertionError(other)
    assert caught.value is not None


# -- stores the runtime hands to runs ------------------------------------------------------


def test_a_runtime_has_no_vector_store_or_artifact_store_by_default():
    match AgentRuntime():
        case AgentRuntime(vector_store=None, artifacts=None):
            pass
        case other:
            pytest.fail(f"unexpected defaults: {other!r}")


@tool
def which_store(ctx: RunContext) -> str:
    """Name the artifact store the tool sees."""
    return str(ctx.deps.get("artifacts"))


async def test_the_runtimes_artifact_store_reaches_tools_in_deps(fake, providers, tmp_path):
    store = LocalArtifactStore(tmp_path)
    runtime = AgentRuntime(
        clock=StepClock(), ids=SequentialIds(), providers=providers, artifacts=store
    )
    fake.reply_tool_call("which_store").reply("Done.")

    result = await runtime.run(weather_agent(tools=[which_store]), QUESTION)

    assert result.context.iterations[0].messages[-1].content == repr(store)


async def test_an_artifact_store_given_in_deps_wins_over_the_runtimes(fake, providers, tmp_path):
    runtime = AgentRuntime(
        clock=StepClock(),
        ids=SequentialIds(),
        providers=providers,
        artifacts=LocalArtifactStore(tmp_path / "runtime"),
    )
    fake.reply_tool_call("which_store").reply("Done.")

    result = await runtime.run(
        weather_agent(tools=[which_store]), QUESTION, deps={"artifacts": "given"}
    )

    assert result.context.iterations[0].messages[-1].content == "given"


async def test_run_sync_passes_the_state_to_tools():
    seen: list[Any] = []

    def remember(ctx: RunContext) -> str:
        seen.append(ctx.state)
        return "ok"

    remember.__annotations__ = {"ctx": RunContext, "return": str}
    provider = CannedProvider(
        chat_body(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "remember", "arguments": "{}"},
                    }
                ],
            }
        ),
        chat_body({"role": "assistant", "content": "Done."}),
    )
    runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds(), providers={"local": provider})

    agent = weather_agent("local:m", tools=[tool(remember)])

    await asyncio.to_thread(runtime.run_sync, agent, QUESTION, state={"k": 1})

    assert seen == [{"k": 1}]
