"""A streamed run builds the same context as a plain one, in every wire format.

Each scripted conversation runs twice through the real SDK of its provider, answered by
:class:`FakeLLM`: with ``Agent(stream=False)`` (JSON replies) and ``Agent(stream=True)``
(server-sent events, decoded by the codec's ``decode_stream``). The two contexts must be
identical to the byte in ``model_dump_json()``: text, tool calls and their ids, usage,
model, stop reasons, timestamps.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from pytest_agentctx import (
    Agent,
    AgentRuntime,
    ContextWindow,
    FakeLLM,
    MaxIterationsExceeded,
    RunResult,
    SequentialIds,
    StepClock,
    tool,
)

MODELS = [
    pytest.param("openai:gpt-4o-mini", id="openai-chat"),
    pytest.param("anthropic:claude-haiku-4-5", id="anthropic"),
    pytest.param("openai-responses:gpt-4.1-mini", id="openai-responses"),
]


@tool
def lookup_order(order_id: str) -> str:
    """Status of an order."""
    return f"{order_id}: shipped"


@tool
def list_orders() -> str:
    """Every open order."""
    return "A1, B2"


Conversation = Callable[[AgentRuntime, Agent], Awaitable[RunResult]]


async def one_run(runtime: AgentRuntime, agent: Agent) -> RunResult:
    return await runtime.run(agent, "Where are my orders?")


async def three_turns(runtime: AgentRuntime, agent: Agent) -> RunResult:
    return await runtime.run_multi_turn(agent, "Where are my orders?", ["And B2?", "Thanks!"])


async def failed_then_continued(runtime: AgentRuntime, agent: Agent) -> RunResult:
    with pytest.raises(MaxIterationsExceeded) as raised:
        await runtime.run(agent, "Where are my orders?")
    failed = raised.value.result
    assert failed is not None
    return await runtime.continue_conversation(failed, "Just answer, please.")


SCRIPTS: dict[str, tuple[Callable[[FakeLLM], Any], Conversation, dict[str, Any]]] = {
    "a-tool-call-then-an-answer": (
        lambda fake: fake.reply_tool_call("lookup_order", order_id="A1").reply("A1 has shipped."),
        one_run,
        {},
    ),
    "parallel-calls-one-without-arguments": (
        lambda fake: fake.reply(
            tool_calls=[("list_orders", {}), ("lookup_order", {"order_id": "A1"})]
        ).reply("A1 and B2 have shipped."),
        one_run,
        {},
    ),
    "text-beside-a-call-and-unicode": (
        lambda fake: fake.reply(
            "Je vérifie… 📦", tool_calls=[("lookup_order", {"order_id": "Ä-1 日本"})]
        ).reply('Expédié: {"status": "shipped"}\n\n  Merci !  '),
        one_run,
        {},
    ),
    "scripted-usage-and-model": (
        lambda fake: fake.reply(
            tool_calls=[("lookup_order", {"order_id": "A1"})],
            usage={"input_tokens": 900, "output_tokens": 0},
        ).reply("Shipped.", usage={"input_tokens": 1000, "output_tokens": 3}, model="m-2025"),
        one_run,
        {},
    ),
    "an-empty-answer": (lambda fake: fake.reply(""), one_run, {}),
    "three-turns-through-a-window": (
        lambda fake: (
            fake.reply_tool_call("lookup_order", order_id="A1")
            .reply("A1 has shipped.")
            .reply_tool_call("lookup_order", order_id="B2")
            .reply("B2 has shipped.")
            .reply("You are welcome.")
        ),
        three_turns,
        {"window": ContextWindow(max_messages=5, strategy="recent_turns")},
    ),
    "a-failed-run-continued": (
        lambda fake: fake.reply_tool_call("lookup_order", order_id="A1").reply("Sorry."),
        failed_then_continued,
        {"max_iterations": 1},
    ),
}


async def run_both_ways(
    providers: dict[str, Any], model: str, script: str
) -> tuple[list[str], list[list[bool]]]:
    """The context's JSON and the requests' stream flags, without and with streaming."""
    answer, conversation, options = SCRIPTS[script]
    dumps, streamed = [], []
    for stream in (False, True):
        agent = Agent(
            name="support",
            model=model,
            system_prompt="You are a support agent.",
            tools=[lookup_order, list_orders],
            stream=stream,
            **options,
        )
        runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds(), providers=providers)
        with FakeLLM() as fake:
            answer(fake)
            result = await conversation(runtime, agent)
            fake.verify()
        dumps.append(result.context.model_dump_json())
        streamed.append([request.stream for request in fake.requests])
    return dumps, streamed


@pytest.mark.parametrize("script", list(SCRIPTS))
@pytest.mark.parametrize("model", MODELS)
async def test_a_streamed_conversation_builds_the_same_context(providers, model, script):
    dumps, streamed = await run_both_ways(providers, model, script)

    assert (dumps[0] == dumps[1], [set(flags) for flags in streamed]) == (
        True,
        [{False}, {True}],
    ), f"the streamed context differs:\n{dumps[0]}\n{dumps[1]}"
