"""The turn where a replayed simulated conversation left its recording."""

from __future__ import annotations

from hypothesis import given, strategies as st

from pytest_agentctx.evals.divergence import divergence_message, find_divergence
from pytest_agentctx.evals.simulated_user import SimulatedUser
from pytest_agentctx.testing import get_codec

URL = "http://127.0.0.1:1234/v1/chat/completions"


def request(*turns: tuple[str, str]) -> dict[str, object]:
    """A simulated user's request after ``turns`` (its message, the agent's reply)."""
    messages = [
        m
        for said, reply in turns
        for m in ({"role": "user", "content": said}, {"role": "assistant", "content": reply})
    ]
    simulated = SimulatedUser(persona="a customer", goal="a refund")
    return get_codec("openai_chat").encode_request(
        model="gpt-4o-mini", messages=simulated.request_messages(messages)
    )


def test_the_first_differing_reply_names_the_turn():
    found = find_divergence(["a", "b2", "c"], [["a", "b", "c"]])

    assert found is not None
    assert (found.turn, found.recorded, found.now) == (2, "b", "b2")


def test_the_recording_followed_longest_is_the_one_compared():
    found = find_divergence(["a", "b", "x"], [["a", "y"], ["a", "b"], ["a", "b", "c"]])

    assert found is not None
    assert (found.turn, found.recorded) == (3, "c")


def test_replies_that_all_match_a_recording_explain_nothing():
    assert find_divergence(["a", "b"], [["a", "b", "c"]]) is None


def test_the_message_says_the_turn_and_diffs_the_replies():
    recorded = request(("hi", "Hello!"), ("refund", "Done: refund 42 sent."))
    now = request(("hi", "Hello!"), ("refund", "Sorry, I cannot."))

    message = divergence_message(URL, now, [(URL, recorded)])

    assert message is not None
    assert message.startswith("The agent diverged at turn 2 of the simulated user's")
    assert "-Done: refund 42 sent.\n+Sorry, I cannot." in message


def test_a_request_that_is_not_a_simulated_users_is_left_to_the_plain_miss():
    body = get_codec("openai_chat").encode_request(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
    )

    assert divergence_message(URL, body, [(URL, request(("hi", "Hello!")))]) is None


def test_recordings_of_another_endpoint_are_not_compared():
    other = "http://127.0.0.1:1234/v1/messages"

    assert divergence_message(URL, request(("hi", "Yo")), [(other, request(("hi", "Hey")))]) is None


@given(
    replies=st.lists(st.text(max_size=20), min_size=1, max_size=8),
    data=st.data(),
)
def test_a_reply_changed_at_any_turn_is_named_at_that_turn(
    replies: list[str], data: st.DataObject
) -> None:
    turn = data.draw(st.integers(min_value=1, max_value=len(replies)), label="turn")
    now = [*replies[: turn - 1], replies[turn - 1] + " (changed)"]

    found = find_divergence(now, [replies])

    assert found is not None
    assert (found.turn, found.recorded, found.now) == (turn, replies[turn - 1], now[-1])
