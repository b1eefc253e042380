"""Unit tests for pytest_agentctx.context.history: the flat, read-only conversation view."""

import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

import pytest

from pytest_agentctx.context.errors import EmptyHistory, LastEntryNotUserMessage
from pytest_agentctx.context.history import History
from pytest_agentctx.context.model import AgentContext, Message, ToolCall, ToolResult

T0 = datetime(2025, 1, 1, tzinfo=UTC)

SYSTEM = Message(role="system", content="Be brief.")
USER = Message(role="user", content="Weather in Paris?")
CALL = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
ASK = Message(role="assistant", tool_calls=[CALL])
RESULT = Message(role="tool", content="18C", tool_call_id="call_1", name="get_weather")
ANSWER = Message(role="assistant", content="It is 18C in Paris.")


def started() -> AgentContext:
    return AgentContext.new("Weather in Paris?", system_prompt="Be brief.", at=T0)


def with_tool_results() -> AgentContext:
    return (
        started()
        .add_assistant_message(None, [CALL], at=T0)
        .add_tool_results(
            [ToolResult(tool_call_id="call_1", name="get_weather", content="18C")], at=T0
        )
    )


def answered() -> AgentContext:
    return with_tool_results().add_assistant_message("It is 18C in Paris.", at=T0)


def test_of_builds_the_entries_from_every_iteration_of_the_context() -> None:
    assert History.of(answered()).entries == (USER, ASK, RESULT, ANSWER)


def test_system_messages_are_kept_apart_from_the_entries() -> None:
    assert History.of(answered()).system_messages == (SYSTEM,)


def test_history_is_a_sequence_of_its_entries() -> None:
    history = History([SYSTEM, USER, ANSWER])

    assert (isinstance(history, Sequence), len(history), list(history)) == (
        True,
        2,
        [USER, ANSWER],
    )


def test_indexing_reads_entries_and_skips_system_messages() -> None:
    history = History([SYSTEM, USER, ANSWER])

    assert (history[0], history[-1]) == (USER, ANSWER)


def test_indexing_past_the_last_entry_raises_index_error() -> None:
    with pytest.raises(IndexError):
        History([SYSTEM, USER])[1]


def test_history_matches_a_sequence_pattern() -> None:
    match History.of(answered()):
        case [Message("user"), *_, Message("assistant", "It is 18C in Paris.")]:
            pass
        case _:
            pytest.fail("the history should start with the user and end with the answer")


def test_history_of_an_older_context_does_not_see_later_updates() -> None:
    context = started()
    history = History.of(context)

    context.add_assistant_message("Sunny.")

    assert history.entries == (USER,)


@pytest.mark.parametrize(
    ("messages", "expected"),
    [([], True), ([SYSTEM], True), ([SYSTEM, USER], False)],
    ids=["nothing", "system only", "user message"],
)
def test_is_empty_when_there_is_no_entry(messages: list[Message], expected: bool) -> None:
    assert History(messages).is_empty is expected


@pytest.mark.parametrize(
    ("build", "expected"),
    [(started, True), (with_tool_results, True), (answered, False)],
    ids=["user message last", "tool results last", "answer last"],
)
def test_has_staged_message_when_the_users_side_spoke_last(
    build: Callable[[], AgentContext], expected: bool
) -> None:
    assert History.of(build()).has_staged_message is expected


def test_empty_history_has_no_staged_message() -> None:
    assert History([SYSTEM]).has_staged_message is False


def test_validate_for_llm_call_accepts_a_user_message_last() -> None:
    History.of(started()).validate_for_llm_call()  # raises nothing


def test_validate_for_llm_call_accepts_tool_results_last() -> None:
    History.of(with_tool_results()).validate_for_llm_call()  # raises nothing


@pytest.mark.parametrize("messages", [[], [SYSTEM]], ids=["nothing", "system only"])
def test_validate_for_llm_call_on_an_empty_history_raises_empty_history(
    messages: list[Message],
) -> None:
    with pytest.raises(
        EmptyHistory,
        match=r"has no entry \(only system messages, or nothing\), so there is nothing to send"
        r".*Add a user message first, for example with AgentContext\.new\(input\) or "
        r"context\.add_user_message\(text\)",
    ):
        History(messages).validate_for_llm_call()


def test_validate_for_llm_call_with_the_assistant_last_raises_and_names_the_entry() -> None:
    with pytest.raises(
        LastEntryNotUserMessage,
        match=re.escape(
            "The last history entry (#4) is an assistant message ('It is 18C in Paris.'); a "
            "model call needs a user message or tool results last. Add the next user message "
            "with context.add_user_message(text)."
        ),
    ):
        History.of(answered()).validate_for_llm_call()


def test_last_entry_error_previews_only_the_first_60_characters() -> None:
    long_answer = Message(role="assistant", content="x" * 60 + "TAIL")

    with pytest.raises(LastEntryNotUserMessage, match=r"message \('x{60}'\);"):
        History([USER, long_answer]).validate_for_llm_call()


def test_last_entry_error_previews_an_assistant_message_without_content() -> None:
    with pytest.raises(LastEntryNotUserMessage, match=r"\(#2\) is an assistant message \(''\);"):
        History([USER, ASK]).validate_for_llm_call()


def test_repr_shows_the_number_of_entries_and_whether_one_is_staged() -> None:
    assert repr(History.of(started())) == "History(1 entries, staged=True)"
