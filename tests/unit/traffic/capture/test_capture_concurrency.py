"""Unit tests of capture on what real clients send: Responses tool results answered by the
output item's id, and agents run concurrently by one test (pytest_agentctx.traffic.capture,
.nesting).

The live tests drive the real ``openai`` SDK against the fake model, in the shapes of the
recorded Responses cassettes of the compatibility corpus (output items with an ``id``
``fc_...`` beside their ``call_id``).
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import openai

from pytest_agentctx import (
    FakeLLM,
    Message,
    ToolCall,
    build_contexts,
    capture_contexts,
    nested_runs,
)
from pytest_agentctx.traffic.capture import Exchange
from pytest_agentctx.traffic.codecs import Completion, get_codec

URL = "https://api.openai.com/v1/chat/completions"
CHAT = get_codec("openai_chat")


def _client() -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_retries=0)


async def test_responses_results_answered_by_the_items_id_join_their_call():
    fake = FakeLLM().reply_tool_call("get_capital", country="PotatoLand").reply("Potato City.")
    with fake, capture_contexts() as runs:
        async with _client() as client:
            history: list[Any] = [{"role": "user", "content": "Capital of PotatoLand?"}]
            first = await client.responses.create(model="gpt-4o", input=history)
            (item,) = first.output
            assert item.type == "function_call"
            assert item.id != item.call_id
            history += [
                item.model_dump(exclude_none=True),
                {"type": "function_call_output", "call_id": item.id, "output": "Potato City"},
            ]
            await client.responses.create(model="gpt-4o", input=history)

    first_iteration, second_iteration = runs.context.iterations
    assert [m.role for m in first_iteration.messages] == ["user", "assistant", "tool"]
    assert first_iteration.messages[-1].tool_call_id == item.call_id
    assert [m.role for m in second_iteration.messages] == ["assistant"]


class _Agent:
    """A tool-calling agent on the real SDK whose tool waits until ``gate`` opens."""

    def __init__(self, client: openai.AsyncOpenAI, question: str) -> None:
        self.client = client
        self.history: list[Any] = [{"role": "user", "content": question}]

    async def run(self, gate: asyncio.Barrier) -> str | None:
        reply = await self.client.chat.completions.create(model="m", messages=self.history)
        message = reply.choices[0].message
        while message.tool_calls:
            self.history.append(message.model_dump(exclude_none=True))
            await gate.wait()  # both agents wait for a tool at once
            for call in message.tool_calls:
                self.history.append({"role": "tool", "tool_call_id": call.id, "content": "18C"})
            reply = await self.client.chat.completions.create(model="m", messages=self.history)
            message = reply.choices[0].message
        return message.content


async def test_two_agents_run_concurrently_are_two_top_level_runs():
    fake = (
        FakeLLM()
        .reply_tool_call("get_weather", city="Paris")
        .reply_tool_call("get_weather", city="Rome")
        .reply("Sunny in Paris.")
        .reply("Rainy in Rome.")
    )
    gate = asyncio.Barrier(2)
    with fake, capture_contexts() as runs:
        async with _client() as client:
            await asyncio.gather(
                _Agent(client, "Weather here?").run(gate),
                _Agent(client, "Weather there?").run(gate),
            )

    # which agent's second call comes first is the scheduler's choice
    assert sorted(len(ctx.iterations) for ctx in runs) == [2, 2]
    assert [path for ctx in runs for path, _ in nested_runs(ctx)] == []


def _sync_agent(question: str, gate: threading.Barrier) -> None:
    """The tool-calling agent of :class:`_Agent` on the sync SDK, for a thread."""
    with openai.OpenAI(
        api_key="sk-test", base_url="http://127.0.0.1:9/v1", max_retries=0
    ) as client:
        history: list[Any] = [{"role": "user", "content": question}]
        message = client.chat.completions.create(model="m", messages=history).choices[0].message
        assert message.tool_calls
        history.append(message.model_dump(exclude_none=True))
        gate.wait()  # both agents wait for a tool at once
        call = message.tool_calls[0]
        history.append({"role": "tool", "tool_call_id": call.id, "content": "18C"})
        client.chat.completions.create(model="m", messages=history)


def test_two_agents_run_on_two_threads_are_two_top_level_runs():
    fake = (
        FakeLLM()
        .reply_tool_call("get_weather", city="Paris")
        .reply_tool_call("get_weather", city="Rome")
        .reply("Sunny.")
        .reply("Rainy.")
    )
    gate = threading.Barrier(2, timeout=30)
    with fake, capture_contexts() as runs:
        threads = [
            threading.Thread(target=_sync_agent, args=(question, gate))
            # the fake answers in arrival order: no question may quote the other's call
            for question in ("Weather here?", "Weather there?")
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)

    assert sorted(len(ctx.iterations) for ctx in runs) == [2, 2]
    assert [path for ctx in runs for path, _ in nested_runs(ctx)] == []


# -- the link of a sub-agent to the call that started it ------------------------------


def _exchange(history: list[dict[str, Any]], content: str | None, *calls: ToolCall) -> Exchange:
    """One chat completions call of ``history``, answered ``content`` and ``calls``; the
    reply joins ``history``."""
    body = CHAT.encode_request(model="m", messages=history, tools=())
    reply = CHAT.encode_response(Completion(content=content, tool_calls=calls), response_id="r")
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [call.model_dump() for call in calls]
    history.append(message)
    return Exchange("POST", URL, 200, {"json": body}, {"json": reply})


def _boss_and_helper(helper_question: str, result: str) -> tuple[list[Exchange], str]:
    """A boss whose ``research(topic="Paris")`` call runs a helper asked ``helper_question``
    that answers "Paris is in France.", the call's result being ``result``."""
    boss: list[dict[str, Any]] = [{"role": "user", "content": "Research Paris."}]
    helper: list[dict[str, Any]] = [{"role": "user", "content": helper_question}]
    call = ToolCall(id="b1", name="research", arguments={"topic": "Paris"})
    exchanges = [_exchange(boss, None, call), _exchange(helper, "Paris is in France.")]
    boss.append({"role": "tool", "tool_call_id": "b1", "content": result})
    exchanges.append(_exchange(boss, "Done."))
    return exchanges, "iterations[0].metadata.subagents.b1.context"


def test_a_sub_agent_whose_answer_is_the_calls_result_stays_nested():
    exchanges, path = _boss_and_helper("Find facts.", "The helper says: Paris is in France.")

    assert [p for p, _ in nested_runs(build_contexts(exchanges).context)] == [path]


def test_a_conversation_that_neither_quotes_the_call_nor_answers_it_is_top_level():
    exchanges, _ = _boss_and_helper("What is 2 + 2?", "No facts found.")

    runs = build_contexts(exchanges)

    assert [ctx.final_output for ctx in runs] == ["Done.", "Paris is in France."]


def test_a_conversation_still_running_after_the_call_was_answered_is_top_level():
    boss: list[dict[str, Any]] = [{"role": "user", "content": "Research Paris."}]
    other: list[dict[str, Any]] = [{"role": "user", "content": "Tell me about Paris."}]
    call = ToolCall(id="b1", name="research", arguments={"topic": "Paris"})
    lookup = ToolCall(id="o1", name="lookup", arguments={})
    exchanges = [_exchange(boss, None, call), _exchange(other, None, lookup)]
    boss.append({"role": "tool", "tool_call_id": "b1", "content": "Paris is in France."})
    exchanges.append(_exchange(boss, "Done."))
    other.append({"role": "tool", "tool_call_id": "o1", "content": "France"})
    exchanges.append(_exchange(other, "Paris is in France."))

    runs = build_contexts(exchanges)

    assert [ctx.final_output for ctx in runs] == ["Done.", "Paris is in France."]
    assert runs[0].iterations[0].messages[-1] == Message(
        role="tool", content="Paris is in France.", tool_call_id="b1", name="research"
    )
