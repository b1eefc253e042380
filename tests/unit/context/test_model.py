"""Unit tests for pytest_agentctx.context.model: the nested iteration context and its models."""

import copy
import pickle
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from pytest_agentctx.context._seq import Seq
from pytest_agentctx.context.errors import ContextStateError
from pytest_agentctx.context.model import (
    INVALID_ARGUMENTS_KEY,
    AgentContext,
    Iteration,
    Message,
    ToolCall,
    ToolResult,
)

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


WEATHER_CALL = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
WEATHER_RESULT = ToolResult(tool_call_id="call_1", name="get_weather", content="18C")


def started() -> AgentContext:
    """Iteration 1 open with the system and user messages."""
    return AgentContext.new("Weather in Paris?", system_prompt="Be brief.", at=at(0))


def waiting_for_tools() -> AgentContext:
    """Iteration 1 open, waiting for the result of call_1."""
    return started().add_assistant_message(None, [WEATHER_CALL], at=at(1))


def after_tool_results() -> AgentContext:
    """Iteration 1 complete, iteration 2 open and empty."""
    return waiting_for_tools().add_tool_results([WEATHER_RESULT], at=at(2))


def answered() -> AgentContext:
    """Iteration 2 complete with the final answer."""
    return after_tool_results().add_assistant_message("It is 18C in Paris.", at=at(3))


def multi_turn() -> AgentContext:
    """Two user turns, tool calls (one failing), metadata on two iterations."""
    return (
        answered()
        .with_iteration_metadata({"model": "gpt-test", "usage": {"input_tokens": 12}})
        .add_user_message("And in Rome?", at=at(4))
        .add_assistant_message(
            "Checking.",
            [
                ToolCall(id="call_2", name="get_weather", arguments={"city": "Rome"}),
                ToolCall(id="call_3", name="get_time", arguments={}),
            ],
            at=at(5),
        )
        .add_tool_results(
            [
                ToolResult(tool_call_id="call_2", name="get_weather", content="21C"),
                ToolResult(
                    tool_call_id="call_3", name="get_time", content="timeout", is_error=True
                ),
            ],
            at=at(6),
        )
        .add_assistant_message("It is 21C in Rome.", at=at(7))
        .with_iteration_metadata({"model": "gpt-test", "ratio": 0.5, "tags": ["a", None]})
    )


def after_tool_rounds(rounds: int) -> AgentContext:
    """A context whose current iteration is ``rounds + 1``."""
    context = AgentContext.new("go", at=at(0))
    for round_number in range(1, rounds + 1):
        call = ToolCall(id=f"call_{round_number}", name="step")
        context = context.add_assistant_message(None, [call], at=at(round_number))
        context = context.add_tool_results(
            [ToolResult(tool_call_id=call.id, name="step", content="ok")], at=at(round_number)
        )
    return context


SYSTEM = Message(role="system", content="Be brief.")
USER = Message(role="user", content="Weather in Paris?")
ASK_WEATHER = Message(role="assistant", content=None, tool_calls=[WEATHER_CALL])
WEATHER_MESSAGE = Message(role="tool", content="18C", tool_call_id="call_1", name="get_weather")
ANSWER = Message(role="assistant", content="It is 18C in Paris.")


# -- new ---------------------------------------------------------------------------------


def test_new_puts_system_and_user_messages_in_iteration_one() -> None:
    assert started() == AgentContext(
        iterations=[Iteration(number=1, messages=[SYSTEM, USER], started_at=T0)],
        current_iteration=1,
        created_at=T0,
        updated_at=T0,
    )


def test_new_without_system_prompt_holds_only_the_user_message() -> None:
    context = AgentContext.new("hi", at=T0)

    assert context.iterations[0].messages == [Message(role="user", content="hi")]


def test_new_without_at_stamps_the_current_utc_time() -> None:
    before = datetime.now(UTC)
    context = AgentContext.new("hi")
    after = datetime.now(UTC)

    assert before <= context.created_at == context.updated_at <= after


def test_new_rejects_input_that_is_not_a_str() -> None:
    with pytest.raises(
        ContextStateError,
        match=r"takes the user's input as a str, got int: 42\. Pass the text of the first user",
    ):
        AgentContext.new(42)  # type: ignore[arg-type]


# -- add_assistant_message ---------------------------------------------------------------


def test_final_answer_completes_the_current_iteration() -> None:
    context = started().add_assistant_message("Sunny.", at=at(1))

    assert context.iterations == [
        Iteration(
            number=1,
            messages=[SYSTEM, USER, Message(role="assistant", content="Sunny.")],
            started_at=T0,
            completed_at=at(1),
        )
    ]


def test_final_answer_sets_updated_at_and_keeps_created_at() -> None:
    context = started().add_assistant_message("Sunny.", at=at(1))

    assert (context.created_at, context.updated_at) == (T0, at(1))


def test_reply_with_tool_calls_leaves_the_iteration_open_and_records_the_calls() -> None:
    assert waiting_for_tools().iterations == [
        Iteration(
            number=1,
            messages=[SYSTEM, USER, ASK_WEATHER],
            tool_calls=[WEATHER_CALL],
            started_at=T0,
            completed_at=None,
        )
    ]


def test_add_assistant_message_accepts_any_iterable_of_tool_calls() -> None:
    context = started().add_assistant_message(None, iter([WEATHER_CALL]), at=at(1))

    assert context.iterations[0].tool_calls == [WEATHER_CALL]


def test_add_assistant_message_after_a_final_answer_is_refused() -> None:
    with pytest.raises(
        ContextStateError,
        match=r"iteration 2 is already complete .* Call add_user_message\(\) to start a new turn",
    ):
        answered().add_assistant_message("Again.")


def test_add_assistant_message_while_tool_calls_are_pending_is_refused() -> None:
    with pytest.raises(
        ContextStateError,
        match=r"iteration 1 still waits for the results of tool calls call_1\. "
        r"Call add_tool_results\(\) with them first",
    ):
        waiting_for_tools().add_assistant_message("Never mind.")


def test_add_assistant_message_refuses_tool_calls_that_are_not_tool_call_objects() -> None:
    with pytest.raises(
        ContextStateError,
        match=r"tool_calls must hold ToolCall objects, got dict: \{'id': 'call_1'\}\. "
        r"Build them with ToolCall\(id=\.\.\., name=\.\.\., arguments=\{\.\.\.\}\)",
    ):
        started().add_assistant_message(None, [{"id": "call_1"}])  # type: ignore[list-item]


def test_add_assistant_message_refuses_the_same_tool_call_id_twice_in_one_reply() -> None:
    twin = ToolCall(id="call_1", name="get_time")

    with pytest.raises(
        ContextStateError,
        match=r"tool call id 'call_1' is used twice in iteration 1; every tool call needs its own",
    ):
        started().add_assistant_message(None, [WEATHER_CALL, twin])


def test_add_assistant_message_refuses_a_tool_call_id_already_used_in_the_iteration() -> None:
    # An iteration whose tool calls were answered inside it (as a captured run may hold).
    context = AgentContext(
        iterations=[
            Iteration(
                number=1,
                messages=[USER, ASK_WEATHER, WEATHER_MESSAGE],
                tool_calls=[WEATHER_CALL],
                started_at=T0,
            )
        ],
        current_iteration=1,
        created_at=T0,
        updated_at=T0,
    )

    with pytest.raises(
        ContextStateError, match="tool call id 'call_1' is used twice in iteration 1"
    ):
        context.add_assistant_message(None, [WEATHER_CALL])


# -- add_tool_results --------------------------------------------------------------------


def test_tool_results_complete_the_iteration_and_open_the_next_one() -> None:
    context = after_tool_results()

    assert (context.iterations, context.current_iteration, context.updated_at) == (
        [
            Iteration(
                number=1,
                messages=[SYSTEM, USER, ASK_WEATHER, WEATHER_MESSAGE],
                tool_calls=[WEATHER_CALL],
                started_at=T0,
                completed_at=at(2),
            ),
            Iteration(number=2, started_at=at(2)),
        ],
        2,
        at(2),
    )


def test_tool_results_may_come_in_any_order_and_keep_the_given_order() -> None:
    calls = [ToolCall(id="a", name="one"), ToolCall(id="b", name="two")]
    results = [
        ToolResult(tool_call_id="b", name="two", content="2"),
        ToolResult(tool_call_id="a", name="one", content="1"),
    ]

    context = started().add_assistant_message(None, calls).add_tool_results(results)

    assert [m.tool_call_id for m in context.iterations[0].messages[-2:]] == ["b", "a"]


def test_error_tool_result_becomes_an_error_tool_message() -> None:
    failed = ToolResult(tool_call_id="call_1", name="get_weather", content="boom", is_error=True)

    context = waiting_for_tools().add_tool_results([failed])

    assert context.iterations[0].messages[-1] == Message(
        role="tool", content="boom", tool_call_id="call_1", name="get_weather", is_error=True
    )


def test_add_tool_results_without_pending_tool_calls_is_refused() -> None:
    with pytest.raises(
        ContextStateError,
        match=r"iteration 1 has no pending tool call to answer\. "
        r"Add an assistant message with tool_calls first",
    ):
        started().add_tool_results([WEATHER_RESULT])


def test_add_tool_results_refuses_objects_that_are_not_tool_results() -> None:
    with pytest.raises(
        ContextStateError,
        match=re.escape(
            "expected ToolResult objects or mappings {'id': ..., 'result': ...}, got str: "
            "'18C'. Give ToolResult(tool_call_id=..., content=...) or {'id': ..., 'result': ...}."
        ),
    ):
        waiting_for_tools().add_tool_results(["18C"])  # type: ignore[list-item]


def test_add_tool_results_for_unknown_call_ids_is_refused() -> None:
    stranger = ToolResult(tool_call_id="call_9", name="get_weather", content="18C")

    with pytest.raises(
        ContextStateError,
        match=re.escape(
            "a result answers tool call id 'call_9', but iteration 1 has no pending tool call "
            "with that id; it waits for call_1 (get_weather). Give each result the id of one "
            "of them."
        ),
    ):
        waiting_for_tools().add_tool_results([stranger])


def test_add_tool_results_missing_one_of_the_pending_calls_is_refused() -> None:
    calls = [ToolCall(id="a", name="one"), ToolCall(id="b", name="two")]
    context = started().add_assistant_message(None, calls)

    with pytest.raises(
        ContextStateError,
        match=re.escape(
            "got results for tool call ids ['a'], but iteration 1 waits for exactly ['a', 'b'] "
            "(a (one), b (two)). Give one ToolResult per pending tool call."
        ),
    ):
        context.add_tool_results([ToolResult(tool_call_id="a", name="one", content="1")])


def test_add_tool_results_answering_one_call_twice_is_refused() -> None:
    with pytest.raises(
        ContextStateError,
        match=re.escape("got results for tool call ids ['call_1', 'call_1'], but iteration 1"),
    ):
        waiting_for_tools().add_tool_results([WEATHER_RESULT, WEATHER_RESULT])


# -- tool results without a name, and as mappings ---------------------------------------


def test_a_tool_result_may_leave_its_name_out() -> None:
    assert ToolResult(tool_call_id="call_1", content="18C").name is None


def test_a_tool_result_without_a_name_takes_the_name_of_its_call() -> None:
    result = ToolResult(tool_call_id="call_1", content="18C")

    context = waiting_for_tools().add_tool_results([result], at=at(2))

    assert context == after_tool_results()


def test_a_tool_result_as_an_id_and_result_mapping_answers_its_call() -> None:
    context = waiting_for_tools().add_tool_results([{"id": "call_1", "result": "18C"}], at=at(2))

    assert context == after_tool_results()


def test_a_result_mapping_may_use_the_field_names_of_tool_result() -> None:
    result = {"tool_call_id": "call_1", "content": "boom", "name": "get_weather", "is_error": True}

    context = waiting_for_tools().add_tool_results([result])

    assert context.iterations[0].messages[-1] == Message(
        role="tool", content="boom", tool_call_id="call_1", name="get_weather", is_error=True
    )


def test_a_result_that_is_not_text_is_written_as_json_with_sorted_keys() -> None:
    result = {"id": "call_1", "result": {"temp": 18, "sky": "clear", "tags": {"b", "a"}}}

    context = waiting_for_tools().add_tool_results([result])

    assert context.iterations[0].messages[-1].content == (
        '{"sky": "clear", "tags": ["a", "b"], "temp": 18}'
    )


def test_a_result_named_after_another_tool_than_its_call_is_refused() -> None:
    wrong = ToolResult(tool_call_id="call_1", name="get_time", content="18C")

    with pytest.raises(
        ContextStateError,
        match=re.escape(
            "the result for tool call call_1 is named 'get_time', but call_1 called "
            "'get_weather'. Leave the name out (it is taken from the call) or give the id of "
            "the call that the result answers."
        ),
    ):
        waiting_for_tools().add_tool_results([wrong])


def test_a_result_mapping_for_an_unknown_call_names_the_pending_calls() -> None:
    calls = [ToolCall(id="a", name="one"), ToolCall(id="b", name="two")]
    context = started().add_assistant_message(None, calls)

    with pytest.raises(
        ContextStateError, match=re.escape("it waits for a (one), b (two). Give each result")
    ):
        context.add_tool_results([{"id": "c", "result": "3"}, {"id": "a", "result": "1"}])


@pytest.mark.parametrize(
    ("result", "message"),
    [
        pytest.param(
            {"id": "call_1", "output": "18C"},
            "names 'output', a key it does not know. A result mapping has 'id' (or "
            "'tool_call_id'), 'result' (or 'content'), and optionally 'name' and 'is_error'.",
            id="unknown-key",
        ),
        pytest.param(
            {"id": "call_1", "tool_call_id": "call_1", "result": "18C"},
            "names 'tool_call_id', twice.",
            id="id-twice",
        ),
        pytest.param(
            {"result": "18C"},
            "needs the id of the tool call it answers (a str) and its result: "
            "{'id': 'call_1', 'result': ...}.",
            id="no-id",
        ),
        pytest.param(
            {"id": "call_1"},
            "needs the id of the tool call it answers (a str) and its result",
            id="no-result",
        ),
        pytest.param(
            {"id": "call_1", "result": "18C", "is_error": "maybe"},
            "cannot be read (is_error: Input should be a valid boolean, unable to interpret "
            "input). 'name' must be a str and 'is_error' a bool.",
            id="is-error-not-a-bool",
        ),
        pytest.param(
            {"id": "call_1", "result": object()},
            "(object) is neither text nor a value JSON can hold. Give its text (str) or a "
            "JSON value.",
            id="result-not-json",
        ),
    ],
)
def test_a_result_mapping_that_cannot_be_read_is_refused(
    result: dict[str, Any], message: str
) -> None:
    with pytest.raises(ContextStateError, match=re.escape(message)):
        waiting_for_tools().add_tool_results([result])


def test_a_named_tool_result_serialises_as_before() -> None:
    assert WEATHER_RESULT.model_dump_json() == (
        '{"tool_call_id":"call_1","name":"get_weather","content":"18C","is_error":false}'
    )


# -- add_user_message --------------------------------------------------------------------


def test_user_message_after_a_final_answer_opens_a_new_iteration() -> None:
    context = answered().add_user_message("And Rome?", at=at(4))

    assert (context.iterations[-1], context.current_iteration, len(context.iterations)) == (
        Iteration(number=3, messages=[Message(role="user", content="And Rome?")], started_at=at(4)),
        3,
        3,
    )


def test_user_message_joins_an_open_iteration_without_assistant_message() -> None:
    context = started().add_user_message("Also Rome.", at=at(1))

    assert (context.iterations[0].messages, context.current_iteration, context.updated_at) == (
        [SYSTEM, USER, Message(role="user", content="Also Rome.")],
        1,
        at(1),
    )


def test_user_message_after_tool_results_joins_the_iteration_they_opened() -> None:
    context = after_tool_results().add_user_message("Use Celsius.")

    assert (context.current_iteration, context.iterations[1].messages) == (
        2,
        [Message(role="user", content="Use Celsius.")],
    )


def test_add_user_message_while_tool_calls_are_pending_is_refused() -> None:
    with pytest.raises(
        ContextStateError,
        match=r"iteration 1 still waits for the results of tool calls call_1; providers reject "
        r"a user message before them\. Call add_tool_results\(\) first",
    ):
        waiting_for_tools().add_user_message("Hurry.")


# -- with_iteration_metadata -------------------------------------------------------------


def test_iteration_metadata_is_merged_into_the_current_iteration() -> None:
    context = answered().with_iteration_metadata({"model": "a", "tokens": 1})

    updated = context.with_iteration_metadata({"model": "b"})

    assert updated.iterations[-1].metadata == {"model": "b", "tokens": 1}


def test_iteration_metadata_leaves_earlier_iterations_alone() -> None:
    context = answered().with_iteration_metadata({"model": "a"})

    assert context.iterations[0].metadata == {}


def test_iteration_metadata_without_at_keeps_updated_at() -> None:
    assert answered().with_iteration_metadata({"model": "a"}).updated_at == at(3)


def test_iteration_metadata_with_at_sets_updated_at() -> None:
    assert answered().with_iteration_metadata({"model": "a"}, at=at(9)).updated_at == at(9)


# -- immutability ------------------------------------------------------------------------

UPDATES: dict[str, tuple[Callable[[], AgentContext], Callable[[AgentContext], AgentContext]]] = {
    "final answer": (started, lambda c: c.add_assistant_message("Sunny.", at=at(5))),
    "tool calls": (started, lambda c: c.add_assistant_message(None, [WEATHER_CALL], at=at(5))),
    "tool results": (waiting_for_tools, lambda c: c.add_tool_results([WEATHER_RESULT], at=at(5))),
    "user joins": (started, lambda c: c.add_user_message("More.", at=at(5))),
    "user opens": (answered, lambda c: c.add_user_message("More.", at=at(5))),
    "metadata": (answered, lambda c: c.with_iteration_metadata({"k": "v"}, at=at(5))),
}


@pytest.mark.parametrize("update", UPDATES.values(), ids=UPDATES.keys())
def test_every_update_returns_a_new_context_and_leaves_the_old_one_unchanged(
    update: tuple[Callable[[], AgentContext], Callable[[AgentContext], AgentContext]],
) -> None:
    build, apply = update
    old = build()
    before = old.model_dump_json()

    new = apply(old)

    assert (new is not old, new.model_dump_json() != before, old.model_dump_json()) == (
        True,
        True,
        before,
    )


def test_context_fields_cannot_be_assigned() -> None:
    with pytest.raises(ValidationError, match="frozen"):
        started().current_iteration = 2


def test_models_refuse_unknown_fields() -> None:
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        Message(role="user", content="hi", mood="happy")


def test_message_refuses_an_unknown_role() -> None:
    with pytest.raises(ValidationError, match="role"):
        Message(role="robot", content="hi")


def test_iteration_numbers_start_at_one() -> None:
    with pytest.raises(ValidationError, match="greater than or equal to 1"):
        Iteration(number=0, started_at=T0)


# -- branching: contexts share storage but never each other's updates -------------------


def test_two_replies_to_the_same_context_stay_independent() -> None:
    base = started()

    sunny = base.add_assistant_message("Sunny.")
    rainy = base.add_assistant_message("Rainy.")

    assert (sunny.final_output, rainy.final_output, base.final_output) == ("Sunny.", "Rainy.", None)


def test_branching_from_an_older_context_after_a_newer_one_was_appended() -> None:
    older = answered()
    newer = older.add_user_message("And Rome?").add_assistant_message("21C.")

    branch = older.add_user_message("And Oslo?").add_assistant_message("3C.")
    newest = newer.add_user_message("And Madrid?")

    base = ["Be brief.", "Weather in Paris?", None, "18C", "It is 18C in Paris."]
    assert [[m.content for m in c.get_all_messages()] for c in (older, branch, newest)] == [
        base,
        [*base, "And Oslo?", "3C."],
        [*base, "And Rome?", "21C.", "And Madrid?"],
    ]


def test_growing_a_newer_context_does_not_change_a_branch_of_an_older_one() -> None:
    older = answered()
    newer = older.add_user_message("And Rome?")
    branch = older.add_user_message("And Oslo?")
    branch_json = branch.model_dump_json()

    newer.add_assistant_message("21C.").add_user_message("And Madrid?")

    assert branch.model_dump_json() == branch_json


# -- queries -----------------------------------------------------------------------------


def test_extract_tool_calls_returns_the_calls_of_the_last_assistant_message() -> None:
    assert waiting_for_tools().extract_tool_calls() == [WEATHER_CALL]


def test_extract_tool_calls_is_empty_before_any_assistant_message() -> None:
    assert started().extract_tool_calls() == []


def test_extract_tool_calls_is_empty_after_a_final_answer() -> None:
    assert answered().extract_tool_calls() == []


def test_extract_tool_calls_is_empty_once_the_results_opened_a_new_iteration() -> None:
    assert after_tool_results().extract_tool_calls() == []


def test_get_all_messages_lists_every_message_of_every_iteration_in_order() -> None:
    assert answered().get_all_messages() == [SYSTEM, USER, ASK_WEATHER, WEATHER_MESSAGE, ANSWER]


def test_to_messages_gives_the_provider_neutral_dict_form() -> None:
    failed = ToolResult(tool_call_id="call_1", name="get_weather", content="boom", is_error=True)

    context = waiting_for_tools().add_tool_results([failed])

    assert context.to_messages() == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
        },
        {
            "role": "tool",
            "content": "boom",
            "tool_call_id": "call_1",
            "name": "get_weather",
            "is_error": True,
        },
    ]


def test_get_iteration_returns_the_iteration_with_that_number() -> None:
    assert answered().get_iteration(2) == Iteration(
        number=2, messages=[ANSWER], started_at=at(2), completed_at=at(3)
    )


@pytest.mark.parametrize("number", [0, -1, 3, 99])
def test_get_iteration_of_an_absent_number_is_none(number: int) -> None:
    assert answered().get_iteration(number) is None


def test_get_iteration_finds_numbers_that_do_not_match_positions() -> None:
    # A pruned window keeps later iterations only: iteration 5 sits at position 1.
    context = AgentContext(
        iterations=[
            Iteration(number=4, started_at=T0, completed_at=T0),
            Iteration(number=5, messages=[USER], started_at=T0),
        ],
        current_iteration=5,
        created_at=T0,
        updated_at=T0,
    )

    assert (context.get_iteration(5), context.get_iteration(1)) == (
        Iteration(number=5, messages=[USER], started_at=T0),
        None,
    )


def test_get_iteration_messages_returns_a_list_of_that_iterations_messages() -> None:
    messages = answered().get_iteration_messages(1)

    assert (type(messages), messages) == (list, [SYSTEM, USER, ASK_WEATHER, WEATHER_MESSAGE])


def test_get_iteration_messages_of_an_absent_number_is_an_empty_list() -> None:
    assert answered().get_iteration_messages(7) == []


@pytest.mark.parametrize(
    ("rounds", "max_iterations", "expected"),
    [(0, 1, True), (0, 2, False), (1, 2, True), (1, 3, False), (3, 2, True)],
)
def test_exceeded_max_iterations_when_current_iteration_is_at_or_past_the_limit(
    rounds: int, max_iterations: int, expected: bool
) -> None:
    assert after_tool_rounds(rounds).exceeded_max_iterations(max_iterations) is expected


def test_final_output_is_the_content_of_the_final_answer() -> None:
    assert answered().final_output == "It is 18C in Paris."


@pytest.mark.parametrize(
    "build",
    [started, waiting_for_tools, after_tool_results, lambda: answered().add_user_message("?")],
    ids=["no reply", "tool calls pending", "results given", "new user turn"],
)
def test_final_output_is_none_while_the_run_is_not_answered(
    build: Callable[[], AgentContext],
) -> None:
    assert build().final_output is None


def test_final_output_of_an_answer_without_content_is_none() -> None:
    assert started().add_assistant_message(None).final_output is None


def test_final_output_is_none_when_a_complete_iteration_ends_asking_for_tools() -> None:
    # A captured run can stop (max iterations) right after its tool calls were answered.
    asking = Message(role="assistant", content="Let me check.", tool_calls=[WEATHER_CALL])
    context = AgentContext(
        iterations=[
            Iteration(
                number=1,
                messages=[USER, asking, WEATHER_MESSAGE],
                tool_calls=[WEATHER_CALL],
                started_at=T0,
                completed_at=at(1),
            )
        ],
        current_iteration=1,
        created_at=T0,
        updated_at=at(1),
    )

    assert context.final_output is None


def test_all_tool_calls_lists_every_call_of_the_run_in_order() -> None:
    assert [call.id for call in multi_turn().all_tool_calls] == ["call_1", "call_2", "call_3"]


# -- Iteration, ToolCall, ToolResult, Message -------------------------------------------


def test_iteration_tool_calls_default_to_an_empty_sequence_never_none() -> None:
    iteration = Iteration(number=1, started_at=T0)

    assert (iteration.tool_calls, iteration.messages, iteration.metadata) == ([], [], {})


def test_iteration_is_complete_once_completed_at_is_set() -> None:
    iteration = Iteration(number=1, started_at=T0)

    assert (
        iteration.is_complete,
        iteration.model_copy(update={"completed_at": T0}).is_complete,
    ) == (
        False,
        True,
    )


def test_pending_tool_calls_leave_out_calls_answered_by_a_tool_message() -> None:
    other = ToolCall(id="call_2", name="get_time")
    iteration = Iteration(
        number=1,
        messages=[
            USER,
            Message(role="assistant", tool_calls=[WEATHER_CALL, other]),
            WEATHER_MESSAGE,
        ],
        tool_calls=[WEATHER_CALL, other],
        started_at=T0,
    )

    assert iteration.pending_tool_calls == [other]


def test_tool_call_arguments_json_is_compact_and_keeps_non_ascii() -> None:
    call = ToolCall(id="c", name="get_weather", arguments={"city": "Zürich", "days": 2})

    assert call.arguments_json == '{"city":"Zürich","days":2}'


def test_tool_call_arguments_json_gives_back_invalid_raw_text() -> None:
    call = ToolCall(id="c", name="get_weather", arguments={INVALID_ARGUMENTS_KEY: "{city: Paris"})

    assert call.arguments_json == "{city: Paris"


def test_tool_call_arguments_json_dumps_the_invalid_key_beside_other_arguments() -> None:
    call = ToolCall(id="c", name="f", arguments={INVALID_ARGUMENTS_KEY: "{x", "y": 1})

    assert call.arguments_json == '{"__invalid_json_arguments__":"{x","y":1}'


def test_tool_call_arguments_default_to_an_empty_dict() -> None:
    assert ToolCall(id="c", name="f").arguments_json == "{}"


def test_tool_result_to_message_builds_the_tool_message() -> None:
    assert WEATHER_RESULT.to_message() == WEATHER_MESSAGE


def test_message_to_dict_leaves_out_defaults() -> None:
    assert Message(role="user", content="hi").to_dict() == {"role": "user", "content": "hi"}


# -- JSON, pickle, deepcopy --------------------------------------------------------------


def test_json_round_trip_is_lossless() -> None:
    context = multi_turn()

    assert AgentContext.model_validate_json(context.model_dump_json()) == context


def test_json_round_trip_restores_seq_containers() -> None:
    restored = AgentContext.model_validate_json(multi_turn().model_dump_json())

    assert (type(restored.iterations), type(restored.iterations[1].tool_calls)) == (Seq, Seq)


def test_json_round_trip_keeps_the_context_updatable() -> None:
    restored = AgentContext.model_validate_json(multi_turn().model_dump_json())

    assert restored.add_user_message("Thanks", at=at(8)).current_iteration == 5


def test_pickle_round_trip_gives_an_equal_context() -> None:
    context = multi_turn()

    assert pickle.loads(pickle.dumps(context)) == context


def test_deepcopy_gives_an_equal_context() -> None:
    context = multi_turn()

    assert copy.deepcopy(context) == context


# -- match / case ------------------------------------------------------------------------


def test_agent_context_matches_a_nested_keyword_class_pattern() -> None:
    match answered():
        case AgentContext(
            iterations=[Iteration(number=1, tool_calls=[ToolCall(name="get_weather"), *_]), *_]
        ):
            pass
        case _:
            pytest.fail("the run should start with a get_weather call in iteration 1")


def test_agent_context_matches_positional_class_patterns_all_the_way_down() -> None:
    match answered():
        case AgentContext(
            [
                Iteration(
                    1,
                    [
                        Message("system"),
                        Message("user", "Weather in Paris?"),
                        Message("assistant", None, [ToolCall("get_weather", {"city": "Paris"})]),
                        Message("tool", "18C"),
                    ],
                ),
                Iteration(2, [Message("assistant", "It is 18C in Paris.", [])]),
            ],
            2,
        ):
            pass
        case _:
            pytest.fail("the weather run should match its positional pattern")


def test_a_class_pattern_with_another_tool_name_does_not_match() -> None:
    match answered():
        case AgentContext([Iteration(1, tool_calls=[ToolCall("search")]), *_]):
            pytest.fail("the run called get_weather, not search")
        case AgentContext([Iteration(1, tool_calls=[ToolCall("get_weather")]), *_]):
            pass
        case _:
            pytest.fail("the run should match a get_weather call in iteration 1")


def test_iteration_matches_positionally_with_its_times_and_metadata() -> None:
    iteration = answered().with_iteration_metadata({"model": "m"}).iterations[1]

    match iteration:
        case Iteration(2, [_], [], started, completed, {"model": "m"}):
            assert (started, completed) == (at(2), at(3))
        case _:
            pytest.fail("iteration 2 should match Iteration(2, [_], [], started, completed, ...)")


def test_tool_call_matches_positionally_by_name_arguments_and_id() -> None:
    match WEATHER_CALL:
        case ToolCall("get_weather", {"city": city}, "call_1"):
            assert city == "Paris"
        case _:
            pytest.fail("the weather call should match ToolCall('get_weather', {...}, 'call_1')")


def test_tool_result_matches_positionally_by_name_content_id_and_error_flag() -> None:
    failed = ToolResult(tool_call_id="call_1", name="get_weather", content="boom", is_error=True)

    match failed:
        case ToolResult("get_weather", "boom", "call_1", True):
            pass
        case _:
            pytest.fail("the failed result should match ToolResult('get_weather', 'boom', ...)")


def test_message_matches_positionally_by_role_content_and_tool_calls() -> None:
    match ASK_WEATHER:
        case Message("assistant", None, [ToolCall("get_weather")]):
            pass
        case _:
            pytest.fail("the assistant message should match Message('assistant', None, [...])")


def test_match_args_name_the_documented_fields() -> None:
    assert {
        cls.__name__: cls.__match_args__
        for cls in (AgentContext, Iteration, Message, ToolCall, ToolResult)
    } == {
        "AgentContext": ("iterations", "current_iteration"),
        "Iteration": (
            "number",
            "messages",
            "tool_calls",
            "started_at",
            "completed_at",
            "metadata",
        ),
        "Message": ("role", "content", "tool_calls"),
        "ToolCall": ("name", "arguments", "id"),
        "ToolResult": ("name", "content", "tool_call_id", "is_error"),
    }


def test_json_dump_of_the_weather_run() -> None:
    dumped: dict[str, Any] = answered().model_dump(mode="json")

    assert dumped == {
        "iterations": [
            {
                "number": 1,
                "messages": [
                    {
                        "role": "system",
                        "content": "Be brief.",
                        "tool_calls": [],
                        "tool_call_id": None,
                        "name": None,
                        "is_error": False,
                        "reasoning": [],
                    },
                    {
                        "role": "user",
                        "content": "Weather in Paris?",
                        "tool_calls": [],
                        "tool_call_id": None,
                        "name": None,
                        "is_error": False,
                        "reasoning": [],
                    },
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
                        ],
                        "tool_call_id": None,
                        "name": None,
                        "is_error": False,
                        "reasoning": [],
                    },
                    {
                        "role": "tool",
                        "content": "18C",
                        "tool_calls": [],
                        "tool_call_id": "call_1",
                        "name": "get_weather",
                        "is_error": False,
                        "reasoning": [],
                    },
                ],
                "tool_calls": [
                    {"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}
                ],
                "started_at": "2025-01-01T00:00:00Z",
                "completed_at": "2025-01-01T00:00:02Z",
                "metadata": {},
            },
            {
                "number": 2,
                "messages": [
                    {
                        "role": "assistant",
                        "content": "It is 18C in Paris.",
                        "tool_calls": [],
                        "tool_call_id": None,
                        "name": None,
                        "is_error": False,
                        "reasoning": [],
                    }
                ],
                "tool_calls": [],
                "started_at": "2025-01-01T00:00:02Z",
                "completed_at": "2025-01-01T00:00:03Z",
                "metadata": {},
            },
        ],
        "current_iteration": 2,
        "created_at": "2025-01-01T00:00:00Z",
        "updated_at": "2025-01-01T00:00:03Z",
    }
