"""Async tests of the support agent: multi-turn conversations, offline, for every provider.

``fake_llm`` scripts the model and serves its replies in each provider's wire format (the
real SDKs parse them); ``agent_runtime`` has a stepping clock and sequential ids, so every
conversation gives the same context.
"""

from __future__ import annotations

from typing import Any

import pytest
from support_agent import WINDOW, OrderDesk, support_agent

from pytest_agentctx import (
    AgentContext,
    AgentRuntime,
    FakeLLM,
    Iteration,
    Message,
    SequentialIds,
    StepClock,
    ToolCall,
    load_run,
    save_run,
)

MODELS = ["openai:gpt-4o-mini", "openai-responses:gpt-4.1-mini", "anthropic:claude-haiku-4-5"]

#: A customer's turns: the question, the tool call the model makes, the model's answer.
TURNS: list[tuple[str, tuple[str, dict[str, str]] | None, str]] = [
    (
        "Where is my order A100?",
        ("lookup_order", {"order_id": "A100"}),
        "A100 shipped on 2 January with ACME and arrives on 4 January.",
    ),
    (
        "And B200?",
        ("lookup_order", {"order_id": "B200"}),
        "B200 is delayed: the warehouse is waiting for stock.",
    ),
    (
        "What about C300?",
        ("lookup_order", {"order_id": "C300"}),
        "C300 was delivered on 30 December.",
    ),
    (
        "Please refund B200, it is taking too long.",
        ("open_refund", {"order_id": "B200", "reason": "delayed"}),
        "I opened refund R-1 for B200.",
    ),
    ("Thanks, that is all.", None, "You are welcome, have a nice day!"),
]


@pytest.fixture
def deps() -> dict[str, OrderDesk]:
    return {"desk": OrderDesk()}


def script(fake: FakeLLM, turns: list[Any]) -> None:
    for _, call, answer in turns:
        if call is not None:
            fake.reply(tool_calls=[call])
        fake.reply(answer)


@pytest.mark.parametrize("model", MODELS)
async def test_a_follow_up_continues_the_conversation(agent_runtime, fake_llm, deps, model):
    script(fake_llm, TURNS[:2])
    agent = support_agent(model)
    first = await agent_runtime.run(agent, TURNS[0][0], deps=deps)

    second = await agent_runtime.continue_conversation(first, TURNS[1][0], deps=deps)

    match second.context:
        case AgentContext(
            iterations=[
                Iteration(number=1, tool_calls=[ToolCall("lookup_order", {"order_id": "A100"})]),
                Iteration(number=2, tool_calls=[]),
                Iteration(
                    number=3,
                    messages=[Message("user", "And B200?"), Message("assistant"), Message("tool")],
                    tool_calls=[ToolCall("lookup_order", {"order_id": "B200"})],
                ),
                Iteration(number=4, messages=[Message("assistant", str(answer))]),
            ]
        ) if answer.startswith("B200 is delayed"):
            pass
        case context:
            pytest.fail(f"unexpected conversation: {context.get_all_messages()}")
    # the first result is unchanged: a new turn returns a new result
    assert (first.iterations, first.output, second.input) == (
        2,
        TURNS[0][2],
        "Where is my order A100?",
    )


async def test_the_model_sees_the_earlier_turns(agent_runtime, fake_llm, deps):
    script(fake_llm, TURNS[:2])

    await agent_runtime.run_multi_turn(support_agent(), TURNS[0][0], [TURNS[1][0]], deps=deps)

    match fake_llm.requests[2].messages:
        case [
            {"role": "system"},
            {"role": "user", "content": "Where is my order A100?"},
            {"role": "assistant", "tool_calls": [{"name": "lookup_order"}]},
            {"role": "tool", "content": str(status)},
            {"role": "assistant", "content": str()},
            {"role": "user", "content": "And B200?"},
        ] if status.startswith("A100: shipped"):
            pass
        case messages:
            pytest.fail(f"the model did not get the history: {messages}")


@pytest.mark.parametrize("model", MODELS)
async def test_a_long_conversation_is_pruned_and_the_pruning_recorded(
    agent_runtime, fake_llm, deps, model
):
    script(fake_llm, TURNS)

    result = await agent_runtime.run_multi_turn(
        support_agent(model), TURNS[0][0], [question for question, _, _ in TURNS[1:]], deps=deps
    )

    windows = [iteration.metadata["window"] for iteration in result.context.iterations]
    match windows[-1]:
        case {
            "strategy": "oldest_first",
            "dropped": [1, *_],  # the first question went first
            "within_limits": True,
            "tokens_before": int(before),
            "tokens_after": int(after),
        } if after <= WINDOW.max_tokens < before:  # type: ignore[operator]
            pass
        case window:
            pytest.fail(f"the last call was not pruned as expected: {window}")
    # the first call was sent whole; the context itself keeps every message (the system
    # prompt, four turns of a question, a tool call, its result and an answer, a last
    # question and its answer)
    assert (windows[0]["dropped"], len(result.context.get_all_messages())) == ([], 19)


async def test_a_pruned_request_never_splits_a_tool_call_from_its_result(
    agent_runtime, fake_llm, deps
):
    script(fake_llm, TURNS)

    await agent_runtime.run_multi_turn(
        support_agent(), TURNS[0][0], [question for question, _, _ in TURNS[1:]], deps=deps
    )

    for request in fake_llm.requests:
        calls = {c["id"] for m in request.messages for c in m.get("tool_calls", [])}
        results = {m["tool_call_id"] for m in request.messages if m["role"] == "tool"}
        assert (request.messages[0]["role"], results <= calls) == ("system", True)


async def test_a_saved_conversation_is_reloaded_and_continued(
    agent_runtime, fake_llm, deps, tmp_path
):
    script(fake_llm, TURNS[1:4])
    first = await agent_runtime.run_multi_turn(
        support_agent(), TURNS[1][0], [TURNS[2][0]], deps=deps
    )
    path = save_run(tmp_path / "conversation.json", first)

    # later, maybe in another process: load it for the same agent and go on
    loaded = load_run(path, support_agent())
    result = await agent_runtime.continue_conversation(loaded, TURNS[3][0], deps=deps)

    assert (loaded.context, result.output, result.input, deps["desk"].refunds) == (
        first.context,
        "I opened refund R-1 for B200.",
        "And B200?",
        ["B200"],
    )


@pytest.mark.parametrize("model", MODELS)
async def test_streaming_gives_the_same_conversation(deps, model, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    dumps = []
    for stream in (False, True):
        # the same script, served once as JSON replies and once as event streams
        with FakeLLM() as fake:
            script(fake, TURNS[:3])
            runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds())
            result = await runtime.run_multi_turn(
                support_agent(model, stream=stream),
                TURNS[0][0],
                [TURNS[1][0], TURNS[2][0]],
                deps=deps,
            )
            fake.verify()
        assert {request.stream for request in fake.requests} == {stream}
        dumps.append(result.context.model_dump_json())

    assert dumps[0] == dumps[1]
