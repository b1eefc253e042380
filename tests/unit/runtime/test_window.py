"""Unit tests of pytest_agentctx.runtime.window: ContextWindow limits, units and strategies.

Most tests prune one conversation of five turns, counted with a counter that gives every
message 10 tokens, so the expected results can be worked out by hand::

    0 system        1 user q1      2 assistant a1
    3 user q2       4 assistant -> call c2      5 tool (c2)      6 assistant a2
    7 user q3       8 assistant a3
    9 user q4      10 assistant a4
   11 user q5

Units (the messages kept or dropped together) are named by their first index; the call
at 4 and its result at 5 form one unit.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import pytest
import tiktoken

from pytest_agentctx import ContextWindow, ContextWindowError, Pruned, TiktokenCounter
from pytest_agentctx.context.model import Message, ToolCall
from pytest_agentctx.runtime.window import Unit, estimate_tokens


def system(text: str = "Be brief.") -> Message:
    return Message(role="system", content=text)


def user(text: str) -> Message:
    return Message(role="user", content=text)


def assistant(text: str) -> Message:
    return Message(role="assistant", content=text)


def calls(*ids: str, text: str | None = None) -> Message:
    return Message(
        role="assistant",
        content=text,
        tool_calls=[ToolCall(id=i, name="lookup", arguments={"key": i}) for i in ids],
    )


def result(call_id: str, text: str = "found") -> Message:
    return Message(role="tool", content=text, tool_call_id=call_id, name="lookup")


def ten(message: Message) -> int:
    """Every message counts 10 tokens."""
    return 10


CONVERSATION = [
    system(),
    user("q1"),
    assistant("a1"),
    user("q2"),
    calls("c2"),
    result("c2"),
    assistant("a2"),
    user("q3"),
    assistant("a3"),
    user("q4"),
    assistant("a4"),
    user("q5"),
]


def kept(indices: Sequence[int], messages: Sequence[Message] = CONVERSATION) -> list[Message]:
    return [messages[i] for i in indices]


class Recorder:
    """A strategy function that records the units it was given and drops ``drop``."""

    def __init__(self, drop: Sequence[int] = ()) -> None:
        self.drop = list(drop)
        self.units: list[Unit] = []

    def __call__(self, units: Sequence[Unit], window: ContextWindow) -> list[int]:
        self.units = list(units)
        return self.drop


def units_of(messages: Sequence[Message], **options: Any) -> list[Unit]:
    """The units a window makes of ``messages`` (with every message over the limit)."""
    recorder = Recorder()
    options.setdefault("max_messages", 1)
    ContextWindow(strategy=recorder, counter=ten, **options).prune(messages)
    return recorder.units


# -- validation ----------------------------------------------------------------------


def test_a_window_needs_a_limit():
    with pytest.raises(
        ContextWindowError,
        match=r"^ContextWindow\(\) needs a limit: give max_tokens=\.\.\., max_messages=\.\.\. "
        r"or both\.$",
    ):
        ContextWindow()


@pytest.mark.parametrize("name", ["max_tokens", "max_messages"])
@pytest.mark.parametrize("value", [0, -5, True, 2.5, "100"])
def test_limits_must_be_whole_numbers_of_at_least_one(name, value):
    with pytest.raises(
        ContextWindowError,
        match=rf"^ContextWindow\({name}={value!r}\): expected a whole number of at least 1\.$",
    ):
        ContextWindow(**{name: value})


@pytest.mark.parametrize("value", [0, -1, False, "2"])
def test_min_recent_turns_must_be_at_least_one(value):
    with pytest.raises(
        ContextWindowError,
        match=rf"^ContextWindow\(min_recent_turns={value!r}\): expected at least 1; the "
        r"newest user message and what follows it are never dropped\.$",
    ):
        ContextWindow(max_messages=10, min_recent_turns=value)


def test_an_unknown_strategy_is_refused_with_the_known_ones():
    with pytest.raises(
        ContextWindowError,
        match=r"^ContextWindow\(strategy='newest_first'\): expected one of oldest_first, "
        r"middle_out, recent_turns or a function \(units, window\) -> unit ids to drop\.$",
    ):
        ContextWindow(max_messages=10, strategy="newest_first")  # type: ignore[arg-type]


def test_a_counter_must_be_callable():
    with pytest.raises(
        ContextWindowError,
        match=r"^ContextWindow\(counter=42\): expected a function \(message\) -> tokens, such "
        r"as estimate_tokens or TiktokenCounter\(\)\.$",
    ):
        ContextWindow(max_messages=10, counter=42)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [-1, 2.5, True, None])
def test_a_counter_that_returns_no_token_count_is_an_error_naming_it(value):
    def broken(message: Message) -> Any:
        return value

    with pytest.raises(
        ContextWindowError,
        match=rf"^The window's counter 'broken' returned {value!r} for a system message; a "
        r"token count must be a whole number of at least 0\.$",
    ):
        ContextWindow(max_messages=3, counter=broken).prune(CONVERSATION)


# -- within limits ---------------------------------------------------------------------


def test_a_conversation_within_the_limits_is_sent_whole():
    pruned = ContextWindow(max_messages=12, max_tokens=120, counter=ten).prune(CONVERSATION)

    assert pruned == Pruned(
        messages=CONVERSATION,
        dropped=[],
        tokens_before=120,
        tokens_after=120,
        within_limits=True,
        strategy="oldest_first",
    )


def test_metadata_records_the_strategy_what_was_dropped_and_the_sizes():
    pruned = ContextWindow(max_messages=7, counter=ten).prune(CONVERSATION)

    assert pruned.metadata() == {
        "strategy": "oldest_first",
        "dropped": [1, 2, 3, 4, 5, 6],
        "messages_before": 12,
        "messages_after": 6,
        "tokens_before": 120,
        "tokens_after": 60,
        "within_limits": True,
    }


def test_pruning_an_empty_list_sends_nothing():
    assert ContextWindow(max_messages=1).prune([]) == Pruned([], [], 0, 0, True, "oldest_first")


# -- the strategies --------------------------------------------------------------------


def test_oldest_first_drops_the_oldest_units_until_the_rest_fits():
    pruned = ContextWindow(max_messages=7, counter=ten).prune(CONVERSATION)

    # dropping 1 to 5 fits; the answer a2 (6) goes too, or the request would open with it
    assert (pruned.dropped, pruned.messages) == ([1, 2, 3, 4, 5, 6], kept([0, 7, 8, 9, 10, 11]))


def test_a_pruned_request_never_opens_with_the_assistant():
    messages = [system(), user("q1"), assistant("a1"), user("q2"), assistant("a2"), user("q3")]

    pruned = ContextWindow(max_messages=5, counter=ten).prune(messages)

    assert [m.role for m in pruned.messages] == ["system", "user", "assistant", "user"]


def test_oldest_first_stops_at_the_token_limit():
    pruned = ContextWindow(max_tokens=75, counter=ten).prune(CONVERSATION)

    assert (pruned.dropped, pruned.tokens_after, pruned.within_limits) == (
        [1, 2, 3, 4, 5, 6],
        60,
        True,
    )


def test_both_limits_must_hold():
    # max_tokens alone drops two messages, max_messages alone three; then the call c2 and
    # its result and the answer a2 go too, so that the request opens with the user (q3)
    window = ContextWindow(max_tokens=100, max_messages=9, counter=ten)

    assert window.prune(CONVERSATION).dropped == [1, 2, 3, 4, 5, 6]


def test_middle_out_keeps_the_first_turn_and_drops_from_the_middle_outwards():
    # droppable units 3 4 6 7 8 9 10 after the first turn: from the middle (7) outwards
    pruned = ContextWindow(max_messages=7, counter=ten, strategy="middle_out").prune(CONVERSATION)

    assert (pruned.dropped, pruned.messages) == ([4, 5, 6, 7, 8], kept([0, 1, 2, 3, 9, 10, 11]))


def test_middle_out_drops_the_first_turn_last_newest_first():
    pruned = ContextWindow(max_messages=3, counter=ten, strategy="middle_out").prune(CONVERSATION)

    assert (pruned.dropped, pruned.messages) == (
        [2, 3, 4, 5, 6, 7, 8, 9, 10],
        kept([0, 1, 11]),
    )


def test_recent_turns_drops_whole_turns_oldest_first():
    # turn 1 (2 messages) is not enough, turn 2 (4 messages) goes with it
    pruned = ContextWindow(max_messages=7, counter=ten, strategy="recent_turns").prune(CONVERSATION)

    assert (pruned.dropped, pruned.messages) == ([1, 2, 3, 4, 5, 6], kept([0, 7, 8, 9, 10, 11]))


def test_a_strategy_function_drops_the_units_it_returns():
    def drop_answers(units: Sequence[Unit], window: ContextWindow) -> list[int]:
        return [unit.id for unit in units if unit.kind == "assistant" and unit.turn < 5]

    pruned = ContextWindow(max_messages=7, counter=ten, strategy=drop_answers).prune(CONVERSATION)

    assert (pruned.dropped, pruned.strategy, pruned.within_limits) == (
        [2, 6, 8, 10],
        "drop_answers",
        False,
    )


def test_a_strategy_function_gets_every_unit_in_order():
    recorder = Recorder()

    ContextWindow(max_messages=7, counter=ten, strategy=recorder).prune(CONVERSATION)

    assert recorder.units == [
        Unit(0, (0,), 0, 10, True, "system"),
        Unit(1, (1,), 1, 10, False, "user"),
        Unit(2, (2,), 1, 10, False, "assistant"),
        Unit(3, (3,), 2, 10, False, "user"),
        Unit(4, (4, 5), 2, 20, False, "tool_exchange"),
        Unit(5, (6,), 2, 10, False, "assistant"),
        Unit(6, (7,), 3, 10, False, "user"),
        Unit(7, (8,), 3, 10, False, "assistant"),
        Unit(8, (9,), 4, 10, False, "user"),
        Unit(9, (10,), 4, 10, False, "assistant"),
        Unit(10, (11,), 5, 10, False, "user"),
    ]


@pytest.mark.parametrize(
    ("refused", "why"),
    [
        pytest.param([0], "pinned system", id="system"),
        pytest.param([10], "newest user message", id="protected-turn"),
        pytest.param([99], "unknown id", id="unknown"),
    ],
)
def test_a_strategy_function_that_breaks_an_invariant_is_refused(refused, why):
    window = ContextWindow(max_messages=7, counter=ten, strategy=Recorder([1, *refused]))

    with pytest.raises(
        ContextWindowError,
        match=rf"^The window strategy 'custom' asked to drop units \[{refused[0]}\], which "
        r"are pinned \(system\), unknown, or within the last 1 turn\(s\)\. Return ids of Unit "
        r"objects whose pinned is False and whose turn is older\.$",
    ):
        window.prune(CONVERSATION)


def test_a_lambda_strategy_is_named_after_it():
    window = ContextWindow(max_messages=7, counter=ten, strategy=lambda units, window: [1])

    assert window.prune(CONVERSATION).strategy == "<lambda>"


# -- what is never dropped -------------------------------------------------------------


def test_the_system_message_is_pinned():
    pruned = ContextWindow(max_messages=1, counter=ten).prune(CONVERSATION)

    assert (pruned.messages, pruned.within_limits) == (kept([0, 11]), False)


def test_without_keep_system_the_system_message_is_dropped_like_any_other():
    pruned = ContextWindow(max_messages=11, counter=ten, keep_system=False).prune(CONVERSATION)

    assert (pruned.dropped, pruned.within_limits) == ([0], True)


def test_the_newest_user_message_is_kept_whatever_the_limit():
    pruned = ContextWindow(max_messages=1, counter=ten, keep_system=False).prune(CONVERSATION)

    assert (pruned.messages, pruned.within_limits) == (kept([11]), True)


@pytest.mark.parametrize("strategy", ["oldest_first", "middle_out", "recent_turns"])
def test_min_recent_turns_keeps_the_last_turns_whole(strategy):
    window = ContextWindow(max_messages=1, counter=ten, min_recent_turns=3, strategy=strategy)

    assert window.prune(CONVERSATION).messages == kept([0, 7, 8, 9, 10, 11])


def test_within_limits_is_false_when_the_protected_part_alone_is_too_big():
    window = ContextWindow(max_tokens=35, counter=ten, min_recent_turns=2)

    assert window.prune(CONVERSATION) == Pruned(
        messages=kept([0, 9, 10, 11]),
        dropped=[1, 2, 3, 4, 5, 6, 7, 8],
        tokens_before=120,
        tokens_after=40,
        within_limits=False,
        strategy="oldest_first",
    )


# -- units -----------------------------------------------------------------------------


def test_parallel_tool_calls_and_their_results_are_one_unit():
    messages = [user("q1"), calls("a", "b"), result("a"), result("b"), assistant("x"), user("q2")]

    assert units_of(messages) == [
        Unit(0, (0,), 1, 10, False, "user"),
        Unit(1, (1, 2, 3), 1, 30, False, "tool_exchange"),
        Unit(2, (4,), 1, 10, False, "assistant"),
        Unit(3, (5,), 2, 10, False, "user"),
    ]


def test_a_result_joins_its_call_even_when_not_next_to_it():
    messages = [user("q1"), calls("a"), calls("b"), result("b"), result("a"), user("q2")]

    assert [unit.indices for unit in units_of(messages)] == [(0,), (1, 4), (2, 3), (5,)]


def test_a_call_and_its_non_adjacent_result_are_dropped_together():
    messages = [user("q1"), calls("a"), calls("b"), result("b"), result("a"), user("q2")]

    pruned = ContextWindow(max_messages=3, counter=ten).prune(messages)

    # the unit of call a (0 is q1, then a with its result 4) goes; b and its result would
    # then open the request, so they go too
    assert (pruned.dropped, pruned.messages) == ([0, 1, 2, 3, 4], kept([5], messages))


def test_a_unit_whose_result_comes_after_a_protected_user_message_is_protected():
    messages = [user("q1"), calls("a"), user("q2"), result("a")]

    pruned = ContextWindow(max_messages=1, counter=ten).prune(messages)

    assert (pruned.dropped, pruned.within_limits) == ([0], False)
    assert units_of(messages)[1] == Unit(1, (1, 3), 2, 20, False, "tool_exchange")


def test_a_result_without_its_call_is_a_unit_of_its_own():
    messages = [user("q1"), result("gone"), assistant("x"), user("q2")]

    assert units_of(messages)[1] == Unit(1, (1,), 1, 10, False, "other")


def test_a_result_answers_the_latest_call_with_its_id():
    messages = [user("q1"), calls("a"), result("a"), user("q2"), calls("a"), result("a")]

    assert [unit.indices for unit in units_of(messages)] == [(0,), (1, 2), (3,), (4, 5)]


def test_messages_before_the_first_user_message_are_in_turn_zero():
    messages = [assistant("Hello!"), user("q1")]

    assert units_of(messages) == [
        Unit(0, (0,), 0, 10, False, "assistant"),
        Unit(1, (1,), 1, 10, False, "user"),
    ]


# -- counting --------------------------------------------------------------------------


def test_estimate_tokens_counts_a_quarter_token_per_character_plus_overhead():
    assert [
        estimate_tokens(user("")),
        estimate_tokens(user("abcd")),
        estimate_tokens(user("abcde")),
        # "lookup" and {"key":"c"}: 6 + 11 characters
        estimate_tokens(calls("c")),
    ] == [4, 5, 6, 9]


def test_the_default_counter_is_the_estimate():
    pruned = ContextWindow(max_tokens=1_000).prune([user("abcde"), calls("c")])

    assert pruned.tokens_before == 15


def test_each_message_is_counted_once_across_prunes():
    counted: list[str | None] = []

    def counting(message: Message) -> int:
        counted.append(message.content)
        return 10

    window = ContextWindow(max_messages=7, counter=counting)
    window.prune(CONVERSATION)
    window.prune(CONVERSATION)
    window.prune([*CONVERSATION, user("q6")])

    assert counted == [m.content for m in CONVERSATION] + ["q6"]


def test_a_window_reused_for_another_conversation_prunes_it_on_its_own():
    window = ContextWindow(max_messages=7, counter=ten)
    window.prune([*CONVERSATION, user("q6")])

    assert window.prune(CONVERSATION) == ContextWindow(max_messages=7, counter=ten).prune(
        CONVERSATION
    )


def test_a_window_serving_many_conversations_prunes_each_on_its_own():
    window = ContextWindow(max_messages=7, counter=ten)
    talks = [[system(f"Be brief, {n}."), *CONVERSATION[1:]] for n in range(20)]
    for talk in talks:  # more conversations than the window keeps layouts for
        window.prune(talk[:9])
        window.prune(talk)

    assert [window.prune(talk).dropped for talk in (talks[0], talks[-1])] == [
        [1, 2, 3, 4, 5, 6],
        [1, 2, 3, 4, 5, 6],
    ]


def test_a_window_keeps_the_grouping_of_its_last_sixteen_conversations():
    # (white-box: what makes the prune before the next call cheap)
    window = ContextWindow(max_messages=7, counter=ten)
    talks = [[system(f"Be brief, {n}."), *CONVERSATION[1:]] for n in range(20)]
    for talk in talks[:3]:
        window.prune(talk[:9])
        window.prune(talk)
    kept_three = [layout.messages for layout in window._layouts.values()]
    for talk in talks[3:]:
        window.prune(talk)

    assert (kept_three, len(window._layouts), next(iter(window._layouts.values())).messages) == (
        talks[:3],
        16,
        talks[4],
    )


def test_a_grown_conversation_prunes_as_a_new_window_would():
    window = ContextWindow(max_messages=7, counter=ten, strategy="recent_turns")
    window.prune(CONVERSATION[:6])
    grown = [*CONVERSATION, assistant("a5"), user("q6"), calls("c6"), result("c6")]

    assert window.prune(grown) == ContextWindow(
        max_messages=7, counter=ten, strategy="recent_turns"
    ).prune(grown)


def test_windows_compare_by_their_settings_not_their_caches():
    used = ContextWindow(max_messages=7)
    used.prune(CONVERSATION)

    assert (used == ContextWindow(max_messages=7), "_cache" in repr(used)) == (True, False)


# -- tiktoken --------------------------------------------------------------------------


@pytest.fixture
def tiny_encoding() -> tiktoken.Encoding:
    """A byte-level encoding that knows one merge, ``ab`` (no download involved)."""
    ranks = {bytes([byte]): byte for byte in range(256)}
    ranks[b"ab"] = 256
    return tiktoken.Encoding(
        name="tiny", pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens={}
    )


def test_tiktoken_counter_counts_the_encodings_tokens_plus_overhead(tiny_encoding):
    counter = TiktokenCounter(tiny_encoding)

    # "abab" is two tokens; "lookup" six and {"key":"c"} eleven, byte by byte
    assert (counter(user("abab")), counter(calls("c"))) == (4 + 2, 4 + 0 + 6 + 11)


def test_tiktoken_counter_encodes_each_text_once(tiny_encoding, monkeypatch):
    encoded: list[str] = []
    encode = tiny_encoding.encode

    def counting(text: str, **options: Any) -> list[int]:
        encoded.append(text)
        return encode(text, **options)

    monkeypatch.setattr(tiny_encoding, "encode", counting)
    counter = TiktokenCounter(tiny_encoding)
    counter(user("abab"))
    counter(assistant("abab"))

    assert encoded == ["abab"]


def test_tiktoken_counter_treats_special_token_text_as_plain_text():
    ranks = {bytes([byte]): byte for byte in range(256)}
    encoding = tiktoken.Encoding(
        name="special",
        pat_str=r"\S+|\s+",
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 256},
    )

    assert TiktokenCounter(encoding)(user("<|endoftext|>")) == 4 + len("<|endoftext|>")


def test_a_window_counts_with_tiktoken(tiny_encoding):
    window = ContextWindow(max_tokens=14, counter=TiktokenCounter(tiny_encoding))

    pruned = window.prune([user("abab"), assistant("ab"), user("abababab")])

    # 6 + 5 + 8 tokens: dropping the oldest message is enough, and its answer goes with it
    assert (pruned.tokens_before, pruned.dropped, pruned.tokens_after) == (19, [0, 1], 8)


def test_tiktoken_counter_without_tiktoken_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "tiktoken", None)

    with pytest.raises(
        ContextWindowError,
        match=r"^TiktokenCounter needs tiktoken, which is not installed\. Run: pip install "
        r"tiktoken \(or use the default estimate_tokens\)\.$",
    ):
        TiktokenCounter()
