"""Property tests of ContextWindow pruning on random conversations (hypothesis).

Conversations are drawn with random tool-call structures: parallel calls, results that
come late or after other messages (even after a later user message), calls that are never
answered, results whose call is not in the list, call ids used again after their result,
system messages in the middle. Windows are drawn with every strategy (the built-in ones
and a function), both limits, with and without ``keep_system`` and 1 to 3 protected turns.

The expectations are written against a small reference model of the rules (below), not
against the implementation: a tool result answers the latest assistant message before it
that called its id; a call and its results are one unit; everything from the first user
message of the last ``min_recent_turns`` turns on is protected, and so is every unit that
reaches into it, and the system messages with ``keep_system``.

The runs are derandomized (the same examples every run) and keep no example database.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from pytest_agentctx import ContextWindow, Pruned
from pytest_agentctx.context.model import Message, ToolCall
from pytest_agentctx.runtime.window import Unit, estimate_tokens

SETTINGS = settings(
    max_examples=100,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
BUILT_IN = ("oldest_first", "middle_out", "recent_turns")


# -- random conversations ----------------------------------------------------------------


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    """A conversation of up to ~30 messages with a random tool-call structure."""

    def text() -> str:
        return "x" * draw(st.integers(0, 60))

    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(Message(role="system", content=text()))
    pending: list[str] = []
    answered: list[str] = []
    made = 0
    steps = st.sampled_from(["user", "answer", "calls", "result", "result", "orphan", "system"])
    for step in draw(st.lists(steps, max_size=24)):
        if step == "user":
            messages.append(Message(role="user", content=text()))
        elif step == "answer":
            messages.append(Message(role="assistant", content=text()))
        elif step == "calls":
            ids: list[str] = []
            for _ in range(draw(st.integers(1, 3))):
                reuse = [i for i in answered if i not in ids and i not in pending]
                if reuse and draw(st.integers(0, 4)) == 0:
                    ids.append(draw(st.sampled_from(reuse)))  # an id used again
                else:
                    made += 1
                    ids.append(f"call_{made}")
            calls = [ToolCall(id=i, name="lookup", arguments={"q": text()}) for i in ids]
            content = text() if draw(st.booleans()) else None
            messages.append(Message(role="assistant", content=content, tool_calls=calls))
            pending.extend(ids)
        elif step == "result" and pending:
            call_id = pending.pop(draw(st.integers(0, len(pending) - 1)))
            answered.append(call_id)
            messages.append(
                Message(role="tool", content=text(), tool_call_id=call_id, name="lookup")
            )
        elif step == "orphan":
            messages.append(
                Message(role="tool", content=text(), tool_call_id="call_gone", name="lookup")
            )
        elif step == "system":
            messages.append(Message(role="system", content=text()))
    return messages


def drop_even_units(units: Sequence[Unit], window: ContextWindow) -> list[int]:
    """A strategy function: every other unit it may drop."""
    last_turn = max((unit.turn for unit in units), default=0)
    protected_from = max(1, last_turn - window.min_recent_turns + 1)
    return [u.id for u in units if not u.pinned and u.turn < protected_from and u.id % 2 == 0]


@st.composite
def windows(draw: st.DrawFn, strategies: Sequence[Any] = (*BUILT_IN, drop_even_units)) -> Any:
    max_tokens = draw(st.none() | st.integers(1, 400))
    max_messages = draw(
        st.integers(1, 30) if max_tokens is None else st.none() | st.integers(1, 30)
    )
    return ContextWindow(
        max_tokens=max_tokens,
        max_messages=max_messages,
        keep_system=draw(st.booleans()),
        min_recent_turns=draw(st.integers(1, 3)),
        strategy=draw(st.sampled_from(strategies)),
    )


# -- the reference model -------------------------------------------------------------------


@dataclass
class Reference:
    """What the rules say about a conversation and a window."""

    messages: list[Message]
    answers: dict[int, int]  # index of a tool result -> index of the call it answers
    protected_from: int  # first index of the last min_recent_turns turns
    protected: set[int]  # indices that must never be dropped
    newest_user: int | None

    @classmethod
    def of(cls, messages: list[Message], window: ContextWindow) -> Reference:
        owner: dict[str, int] = {}
        answers: dict[int, int] = {}
        for index, message in enumerate(messages):
            if message.role == "assistant":
                owner.update((call.id, index) for call in message.tool_calls)
            elif message.role == "tool" and message.tool_call_id in owner:
                answers[index] = owner[message.tool_call_id]
        users = [i for i, m in enumerate(messages) if m.role == "user"]
        start = users[max(0, len(users) - window.min_recent_turns)] if users else len(messages)
        units: dict[int, set[int]] = {i: {i} for i in range(len(messages)) if i not in answers}
        for result, call in answers.items():
            units[call].add(result)
        protected: set[int] = set()
        for first, members in units.items():
            pinned = window.keep_system and messages[first].role == "system"
            if pinned or max(members) >= start:
                protected |= members
        return cls(messages, answers, start, protected, users[-1] if users else None)

    def fits(self, indices: set[int], window: ContextWindow) -> bool:
        tokens = sum(estimate_tokens(self.messages[i]) for i in indices)
        return (window.max_tokens is None or tokens <= window.max_tokens) and (
            window.max_messages is None or len(indices) <= window.max_messages
        )


def kept_indices(messages: list[Message], pruned: Pruned) -> list[int]:
    position = {id(message): index for index, message in enumerate(messages)}
    return [position[id(message)] for message in pruned.messages]


# -- the invariants ----------------------------------------------------------------------


@SETTINGS
@given(conversations(), windows())
def test_dropped_and_kept_partition_the_input_in_its_order(messages, window):
    pruned = window.prune(messages)

    kept = kept_indices(messages, pruned)
    assert (kept, sorted(set(pruned.dropped))) == (
        [i for i in range(len(messages)) if i not in pruned.dropped],
        pruned.dropped,
    )


@SETTINGS
@given(conversations(), windows())
def test_a_tool_call_is_never_separated_from_any_of_its_results(messages, window):
    dropped = set(window.prune(messages).dropped)

    split = [
        (call, result)
        for result, call in Reference.of(messages, window).answers.items()
        if (call in dropped) != (result in dropped)
    ]
    assert split == []


@SETTINGS
@given(conversations(), windows())
def test_no_tool_result_is_kept_whose_call_was_dropped(messages, window):
    pruned = window.prune(messages)
    sent_calls = {call.id for m in pruned.messages for call in m.tool_calls}
    dropped = set(pruned.dropped)

    orphaned = [
        result
        for result, call in Reference.of(messages, window).answers.items()
        if result not in dropped
        and (call in dropped or messages[result].tool_call_id not in sent_calls)
    ]
    assert orphaned == []


@SETTINGS
@given(conversations(), windows())
def test_the_newest_user_message_is_never_dropped(messages, window):
    newest = Reference.of(messages, window).newest_user

    assert newest is None or newest not in window.prune(messages).dropped


@SETTINGS
@given(conversations(), windows())
def test_nothing_in_the_last_min_recent_turns_turns_is_dropped(messages, window):
    start = Reference.of(messages, window).protected_from

    assert [i for i in window.prune(messages).dropped if i >= start] == []


@SETTINGS
@given(conversations(), windows())
def test_a_pinned_system_message_is_never_dropped(messages, window):
    dropped = window.prune(messages).dropped

    systems = [i for i in dropped if messages[i].role == "system"]
    assert window.keep_system is False or systems == []


@SETTINGS
@given(conversations(), windows())
def test_nothing_protected_is_dropped(messages, window):
    protected = Reference.of(messages, window).protected

    assert protected.intersection(window.prune(messages).dropped) == set()


@SETTINGS
@given(conversations(), windows(BUILT_IN))
def test_the_result_is_within_limits_whenever_the_protected_part_fits(messages, window):
    reference = Reference.of(messages, window)
    pruned = window.prune(messages)

    assert pruned.within_limits or not reference.fits(reference.protected, window)


@SETTINGS
@given(conversations(), windows())
def test_tokens_and_within_limits_describe_what_is_sent(messages, window):
    pruned = window.prune(messages)
    reference = Reference.of(messages, window)
    sent = set(kept_indices(messages, pruned))

    assert (pruned.tokens_before, pruned.tokens_after, pruned.within_limits) == (
        sum(map(estimate_tokens, messages)),
        sum(estimate_tokens(messages[i]) for i in sent),
        reference.fits(sent, window),
    )


@SETTINGS
@given(conversations(), windows(("oldest_first",)))
def test_oldest_first_drops_only_as_many_of_the_oldest_units_as_needed(messages, window):
    reference = Reference.of(messages, window)
    dropped = set(window.prune(messages).dropped)
    droppable = [
        i
        for i in range(len(messages))
        if i not in reference.protected and i not in reference.answers
    ]

    firsts = [i for i in droppable if i in dropped]
    # the oldest first, among system messages and among the others (a system message left
    # at the start may be followed by dropped units: the request must open with the user)
    for is_system in (True, False):
        among = [i for i in droppable if (messages[i].role == "system") is is_system]
        gone = [i for i in among if i in dropped]
        assert gone == among[: len(gone)]
    users = [n for n, i in enumerate(firsts) if messages[i].role == "user"]
    if users:
        # up to the last question dropped, one unit fewer would not have fit; what follows
        # it was dropped so that the request does not open with the reply to it
        restored = {
            i
            for first in firsts[users[-1] :]
            for i in (first, *(r for r, c in reference.answers.items() if c == first))
        }
        assert not reference.fits(set(range(len(messages))) - dropped | restored, window)


@SETTINGS
@given(conversations(), windows(), st.data())
def test_a_window_that_pruned_before_prunes_like_a_new_one(messages, window, data):
    """The window's caches (counts per message, the layout of the last list) never change
    a result: a conversation that grew, shrank or changed prunes as it would fresh."""
    for _ in range(3):
        size = data.draw(st.integers(0, len(messages)))
        window.prune(messages[:size])
    fresh = ContextWindow(
        max_tokens=window.max_tokens,
        max_messages=window.max_messages,
        keep_system=window.keep_system,
        min_recent_turns=window.min_recent_turns,
        strategy=window.strategy,
    )

    assert window.prune(messages) == fresh.prune(messages)


@SETTINGS
@given(st.lists(conversations(), min_size=2, max_size=4), windows(), st.data())
def test_pruning_other_conversations_in_between_changes_nothing(talks, window, data):
    """One window (one agent) serving several conversations in turns, each growing."""
    fresh = ContextWindow(
        max_tokens=window.max_tokens,
        max_messages=window.max_messages,
        keep_system=window.keep_system,
        min_recent_turns=window.min_recent_turns,
        strategy=window.strategy,
    )
    for _ in range(6):
        messages = data.draw(st.sampled_from(talks))
        size = data.draw(st.integers(0, len(messages)))
        window.prune(messages[:size])

    assert [window.prune(m) for m in talks] == [fresh.prune(m) for m in talks]
