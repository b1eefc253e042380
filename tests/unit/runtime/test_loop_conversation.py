"""Unit tests of conversations: AgentRuntime.continue_conversation and run_multi_turn,
RunResult's derived state, per-turn iteration limits and the window the runtime records.

Runs go through the real ``openai``/``anthropic`` SDKs, answered by :class:`FakeLLM` at the
HTTP transport, with a :class:`StepClock` and :class:`SequentialIds`.
"""

from __future__ import annotations

from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

import pytest

from pytest_agentctx import (
    Agent,
    AgentContext,
    AgentRuntime,
    ContextWindow,
    ConversationError,
    FakeLLM,
    Iteration,
    MaxIterationsExceeded,
    Message,
    RunResult,
    SequentialIds,
    StepClock,
    ToolCall,
    tool,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)
SYSTEM = "You are a support agent."
NOT_EXECUTED = "Not executed: the run stopped at its iteration limit."


@tool
def lookup_order(order_id: str) -> str:
    """Status of an order."""
    return {"A1": "shipped", "B2": "delayed"}.get(order_id, "unknown")


def support(model: str = "openai:gpt-4o-mini", **options: Any) -> Agent:
    return Agent(name="support", model=model, system_prompt=SYSTEM, tools=[lookup_order], **options)


async def failed_run(fake: FakeLLM, runtime: AgentRuntime) -> RunResult:
    """A run that ran out of iterations with two parallel tool calls unanswered."""
    fake.reply(
        tool_calls=[("lookup_order", {"order_id": "A1"}), ("lookup_order", {"order_id": "B2"})]
    )
    with pytest.raises(MaxIterationsExceeded) as raised:
        await runtime.run(support(max_iterations=1), "Where are A1 and B2?")
    failed = raised.value.result
    assert failed is not None
    return failed


# -- continue_conversation -----------------------------------------------------------


async def test_continuing_a_completed_run_adds_the_message_as_a_new_turn(fake, runtime):
    fake.reply_tool_call("lookup_order", order_id="A1").reply("A1 has shipped.")
    fake.reply("You are welcome.")
    first = await runtime.run(support(), "Where is A1?")

    second = await runtime.continue_conversation(first, "Thanks!")

    match second:
        case RunResult(
            output="You are welcome.",
            status="completed",
            error=None,
            context=AgentContext(
                iterations=[
                    Iteration(number=1, tool_calls=[ToolCall("lookup_order", {"order_id": "A1"})]),
                    Iteration(number=2, tool_calls=[]),
                    Iteration(
                        number=3,
                        messages=[
                            Message("user", "Thanks!"),
                            Message("assistant", "You are welcome."),
                        ],
                        tool_calls=[],
                    ),
                ],
                current_iteration=3,
            ),
        ):
            pass
        case other:
            pytest.fail(f"unexpected result: {other!r}")


async def test_continuing_leaves_the_earlier_result_as_it_was(fake, runtime):
    fake.reply("A1 has shipped.").reply("You are welcome.")
    first = await runtime.run(support(), "Where is A1?")
    before = first.context.model_dump_json()

    second = await runtime.continue_conversation(first, "Thanks!")

    assert (first.context.model_dump_json(), first.output, second is first) == (
        before,
        "A1 has shipped.",
        False,
    )


async def test_two_continuations_of_one_result_are_separate_branches(fake, runtime):
    fake.reply("A1 has shipped.").reply("Tomorrow.").reply("ACME.")
    first = await runtime.run(support(), "Where is A1?")

    when = await runtime.continue_conversation(first, "When does it arrive?")
    who = await runtime.continue_conversation(first, "Which carrier?")

    assert [
        [(m.role, m.content) for m in branch.context.get_iteration_messages(2)]
        for branch in (when, who)
    ] == [
        [("user", "When does it arrive?"), ("assistant", "Tomorrow.")],
        [("user", "Which carrier?"), ("assistant", "ACME.")],
    ]


async def test_the_whole_conversation_is_sent_on_the_next_turn(fake, runtime):
    fake.reply_tool_call("lookup_order", order_id="A1").reply("A1 has shipped.")
    fake.reply("You are welcome.")
    first = await runtime.run(support(), "Where is A1?")

    await runtime.continue_conversation(first, "Thanks!")

    assert fake.requests[-1].messages == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Where is A1?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "name": "lookup_order", "arguments": {"order_id": "A1"}}
            ],
        },
        {"role": "tool", "content": "shipped", "tool_call_id": "call_1"},
        {"role": "assistant", "content": "A1 has shipped."},
        {"role": "user", "content": "Thanks!"},
    ]


async def test_continuing_a_failed_run_closes_every_pending_call_with_an_error(fake, runtime):
    failed = await failed_run(fake, runtime)
    fake.reply("Let me try again: A1 shipped, B2 is delayed.")

    result = await runtime.continue_conversation(failed, "Please try again.")

    def closed(call_id: str) -> Message:
        return Message(
            role="tool",
            content=NOT_EXECUTED,
            tool_call_id=call_id,
            name="lookup_order",
            is_error=True,
        )

    assert [it.messages[-2:] for it in result.context.iterations] == [
        [closed("call_1"), closed("call_2")],
        [
            Message(role="user", content="Please try again."),
            Message(role="assistant", content="Let me try again: A1 shipped, B2 is delayed."),
        ],
    ]
    assert (failed.status, result.status, result.output) == (
        "failed",
        "completed",
        "Let me try again: A1 shipped, B2 is delayed.",
    )


async def test_continuing_a_failed_run_leaves_the_failed_result_unchanged(fake, runtime):
    failed = await failed_run(fake, runtime)
    before = failed.context.model_dump_json()
    fake.reply("Sorry.")

    await runtime.continue_conversation(failed, "Please try again.")

    assert (failed.context.model_dump_json(), failed.context.iterations[0].pending_tool_calls) == (
        before,
        [
            ToolCall(id="call_1", name="lookup_order", arguments={"order_id": "A1"}),
            ToolCall(id="call_2", name="lookup_order", arguments={"order_id": "B2"}),
        ],
    )


async def test_a_failed_run_without_pending_calls_continues_with_the_message_only(fake, runtime):
    context = AgentContext.new("Where is A1?", at=T0).add_assistant_message("Hmm.", at=T0)
    failed = RunResult(
        agent=support(), context=context, output=None, status="failed", error="gave up"
    )
    fake.reply("A1 has shipped.")

    result = await runtime.continue_conversation(failed, "Try again.")

    assert [(m.role, m.content) for m in result.context.get_all_messages()] == [
        ("user", "Where is A1?"),
        ("assistant", "Hmm."),
        ("user", "Try again."),
        ("assistant", "A1 has shipped."),
    ]


async def test_a_run_that_ended_with_an_empty_answer_can_be_continued(fake, runtime):
    # an Anthropic reply with no content blocks: a final answer without text
    fake.reply("").reply("A1 has shipped.")
    first = await runtime.run(support("anthropic:claude-haiku-4-5"), "Where is A1?")

    second = await runtime.continue_conversation(first, "Hello?")

    assert (first.output, first.is_finished, second.output) == (None, True, "A1 has shipped.")


async def test_a_run_still_waiting_for_tool_results_is_refused(runtime):
    context = AgentContext.new("Where is A1?", at=T0).add_assistant_message(
        None, [ToolCall(id="call_1", name="lookup_order", arguments={"order_id": "A1"})], at=T0
    )
    unfinished = RunResult(agent=support(), context=context, output=None)

    with pytest.raises(
        ConversationError,
        match=r"^continue_conversation\(\): the run of agent 'support' is still in progress "
        r"\(iteration 1 has no final answer\), so it cannot take a new user message\. "
        r"Continue from a completed or failed run\.$",
    ):
        await runtime.continue_conversation(unfinished, "Hello?")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param({"output": "Hi."}, r"dict: \{'output': 'Hi\.'\}", id="dict"),
        pytest.param(None, "NoneType: None", id="none"),
    ],
)
async def test_continue_conversation_refuses_anything_but_a_run_result(runtime, value, shown):
    with pytest.raises(
        ConversationError,
        match=rf"^continue_conversation\(\) takes the RunResult of an earlier run, got {shown}\.$",
    ):
        await runtime.continue_conversation(value, "Hello?")


async def test_continue_conversation_refuses_a_bare_context(runtime):
    context = AgentContext.new("Where is A1?", at=T0).add_assistant_message("Shipped.", at=T0)

    with pytest.raises(ConversationError, match=r"got AgentContext: "):
        await runtime.continue_conversation(context, "Thanks!")


# -- RunResult -------------------------------------------------------------------------


async def test_input_is_the_first_user_message_derived_from_the_context(fake, runtime):
    fake.reply("Shipped.").reply("Delayed.")
    result = await runtime.run_multi_turn(support(), "Where is A1?", ["And B2?"])

    assert (result.input, [f.name for f in fields(RunResult)]) == (
        "Where is A1?",
        ["agent", "context", "output", "status", "error"],
    )


def test_a_run_in_progress_is_not_finished():
    context = AgentContext.new("Where is A1?", at=T0)

    assert RunResult(agent=support(), context=context, output=None).is_finished is False


# -- run_multi_turn --------------------------------------------------------------------


async def test_run_multi_turn_is_a_run_then_a_continuation_per_follow_up(providers):
    def script(fake: FakeLLM) -> None:
        fake.reply_tool_call("lookup_order", order_id="A1").reply("A1 has shipped.")
        fake.reply_tool_call("lookup_order", order_id="B2").reply("B2 is delayed.")
        fake.reply("You are welcome.")

    folded_runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds(), providers=providers)
    with FakeLLM() as fake:
        script(fake)
        folded = await folded_runtime.run_multi_turn(
            support(), "Where is A1?", ["And B2?", "Thanks!"]
        )
    by_hand_runtime = AgentRuntime(clock=StepClock(), ids=SequentialIds(), providers=providers)
    with FakeLLM() as fake:
        script(fake)
        by_hand = await by_hand_runtime.run(support(), "Where is A1?")
        for message in ("And B2?", "Thanks!"):
            by_hand = await by_hand_runtime.continue_conversation(by_hand, message)

    assert (folded.context.model_dump_json(), folded.output) == (
        by_hand.context.model_dump_json(),
        "You are welcome.",
    )


async def test_run_multi_turn_without_follow_ups_is_a_single_run(fake, runtime):
    fake.reply("A1 has shipped.")

    result = await runtime.run_multi_turn(support(), "Where is A1?", [])

    assert (result.output, result.iterations) == ("A1 has shipped.", 1)


async def test_run_multi_turn_takes_any_iterable_of_follow_ups(fake, runtime):
    fake.reply("One.").reply("Two.").reply("Three.")

    result = await runtime.run_multi_turn(support(), "1?", (f"{n}?" for n in (2, 3)))

    assert [m.content for m in result.context.get_all_messages() if m.role == "user"] == [
        "1?",
        "2?",
        "3?",
    ]


async def test_run_multi_turn_stops_at_a_turn_that_runs_out_of_iterations(fake, runtime):
    fake.reply("A1 has shipped.")
    fake.reply_tool_call("lookup_order", order_id="B2")

    with pytest.raises(MaxIterationsExceeded) as raised:
        await runtime.run_multi_turn(support(max_iterations=1), "A1?", ["B2?", "C3?"])

    failed = raised.value.result
    assert failed is not None
    assert (
        [m.content for m in failed.context.get_all_messages() if m.role == "user"],
        failed.status,
    ) == (["A1?", "B2?"], "failed")


# -- max_iterations per turn -----------------------------------------------------------


async def test_every_turn_may_use_max_iterations_iterations(fake, runtime):
    for order in ("A1", "B2", "C3"):
        fake.reply_tool_call("lookup_order", order_id=order).reply(f"{order}: see above.")

    result = await runtime.run_multi_turn(support(max_iterations=2), "A1?", ["B2?", "C3?"])

    assert (result.iterations, result.output) == (6, "C3: see above.")


async def test_the_limit_counts_from_the_first_iteration_of_the_turn(fake, runtime):
    fake.reply_tool_call("lookup_order", order_id="A1").reply("A1 has shipped.")
    fake.reply_tool_call("lookup_order", order_id="B2").reply_tool_call(
        "lookup_order", order_id="B2"
    )
    first = await runtime.run(support(max_iterations=2), "A1?")

    with pytest.raises(
        MaxIterationsExceeded,
        match=r"^Agent 'support' used its 2 iterations and still asked for tools \(lookup_order\) "
        r"in iteration 4\. ",
    ):
        await runtime.continue_conversation(first, "B2?")


# -- the context window ----------------------------------------------------------------


async def test_the_runtime_records_the_window_of_every_model_call(fake, runtime):
    fake.reply("A1 has shipped.").reply("B2 is delayed.")
    agent = support(window=ContextWindow(max_messages=3))

    result = await runtime.run_multi_turn(agent, "A1?", ["B2?"])

    # estimated tokens: system 10, "A1?" 5, "A1 has shipped." 8, "B2?" 5; the second call
    # has 4 messages, one too many: the oldest droppable one (the first question) goes, and
    # its answer with it, so that the request does not open with the assistant's reply
    assert [it.metadata["window"] for it in result.context.iterations] == [
        {
            "strategy": "oldest_first",
            "dropped": [],
            "messages_before": 2,
            "messages_after": 2,
            "tokens_before": 15,
            "tokens_after": 15,
            "within_limits": True,
        },
        {
            "strategy": "oldest_first",
            "dropped": [1, 2],
            "messages_before": 4,
            "messages_after": 2,
            "tokens_before": 28,
            "tokens_after": 15,
            "within_limits": True,
        },
    ]


async def test_the_model_is_sent_the_pruned_messages(fake, runtime):
    fake.reply_tool_call("lookup_order", order_id="A1").reply("A1 has shipped.")
    fake.reply("B2 is delayed.")
    agent = support(window=ContextWindow(max_messages=4))

    await runtime.run_multi_turn(agent, "A1?", ["B2?"])

    # the call and its result go together: dropping the call drops its result too; the
    # answer to the dropped question goes as well, so the request opens with the user
    assert fake.requests[-1].messages == [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "B2?"},
    ]


async def test_pruning_leaves_the_context_whole(fake, runtime):
    fake.reply("A1 has shipped.").reply("B2 is delayed.")
    agent = support(window=ContextWindow(max_messages=2))

    result = await runtime.run_multi_turn(agent, "A1?", ["B2?"])

    assert [m.content for m in result.context.get_all_messages()] == [
        SYSTEM,
        "A1?",
        "A1 has shipped.",
        "B2?",
        "B2 is delayed.",
    ]


async def test_an_agent_without_a_window_records_none(fake, runtime):
    fake.reply("A1 has shipped.")

    result = await runtime.run(support(), "A1?")

    assert "window" not in result.context.iterations[0].metadata
