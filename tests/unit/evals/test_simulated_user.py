"""The conversation loop of SimulatedUser, its model answered by a scripted provider."""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import pytest

from pytest_agentctx import Completion, ToolCall
from pytest_agentctx.evals.errors import SimulatedUserError, SimulatedUserReplyError
from pytest_agentctx.evals.simulated_user import SimulatedUser, Transcript
from pytest_agentctx.testing import get_codec
from pytest_agentctx.traffic.roles import current_role


class ScriptedProvider:
    """A provider whose replies are scripted: each send answers the next one."""

    def __init__(self, *replies: str | Completion) -> None:
        self.codec = get_codec("openai_chat")
        self.replies = list(replies)
        self.sent: list[Mapping[str, object]] = []

    async def send(self, body: Mapping[str, object]) -> dict[str, object]:
        self.sent.append(body)
        reply = self.replies.pop(0)
        completion = reply if isinstance(reply, Completion) else Completion(content=reply)
        return self.codec.encode_response(completion, response_id=f"r{len(self.sent)}")


async def echo(message: str) -> str:
    return f"echo: {message}"


def user(provider: ScriptedProvider, **options: object) -> SimulatedUser:
    return SimulatedUser(
        persona="a customer",
        goal="a refund",
        provider=provider,
        **options,  # type: ignore[arg-type]
    )


async def test_the_turn_limit_ends_the_conversation():
    provider = ScriptedProvider("one", "two", "three")

    transcript = await user(provider, max_turns=2).converse(echo)

    assert (transcript.turns, transcript.stopped_because) == (2, "max_turns")
    assert transcript.user_messages == ["one", "two"]
    assert transcript.agent_replies == ["echo: one", "echo: two"]
    assert provider.replies == ["three"]


async def test_the_done_signal_ends_the_conversation_with_its_reason():
    provider = ScriptedProvider("hello", "[DONE] got the refund")

    transcript = await user(provider).converse(echo)

    assert (transcript.turns, transcript.stopped_because) == (1, "done")
    assert transcript.done_reason == "got the refund"
    assert [m["role"] for m in transcript.messages] == ["user", "assistant"]


async def test_a_stop_condition_ends_the_conversation_after_the_reply_it_holds_for():
    provider = ScriptedProvider("hello", "refund please", "unused")

    transcript = await user(provider, stop=lambda t: "refund" in t.last_reply).converse(echo)

    assert (transcript.turns, transcript.stopped_because) == (2, "stop")
    assert transcript.last_reply == "echo: refund please"


async def test_each_request_extends_the_one_before_with_the_agent_reply_as_the_user():
    provider = ScriptedProvider("hello", "[DONE]")

    await user(provider).converse(echo)

    first, second = (cast("list[dict[str, str]]", body["messages"]) for body in provider.sent)
    assert second[: len(first)] == first
    assert second[len(first) :] == [
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "echo: hello"},
    ]
    assert first[0]["role"] == "system"
    assert "a refund" in first[0]["content"]


async def test_the_calls_are_made_with_the_user_sim_role():
    roles: list[str] = []

    class Watching(ScriptedProvider):
        async def send(self, body: Mapping[str, object]) -> dict[str, object]:
            roles.append(current_role())
            return await super().send(body)

    await user(Watching("hello", "[DONE]")).converse(echo)

    assert roles == ["user_sim", "user_sim"]


async def test_a_first_message_opens_without_a_model_call():
    provider = ScriptedProvider("[DONE]")

    transcript = await user(provider, first_message="Hi, I want a refund").converse(echo)

    assert transcript.user_messages == ["Hi, I want a refund"]
    assert len(provider.sent) == 1


async def test_a_plain_function_can_be_the_agent():
    transcript = await user(ScriptedProvider("hello", "[DONE]")).converse(str.upper)

    assert transcript.agent_replies == ["HELLO"]


async def test_an_empty_reply_fails_loudly_naming_the_turn():
    with pytest.raises(SimulatedUserReplyError, match=r"turn 2 with no text.*\[DONE\]"):
        await user(ScriptedProvider("hello", "  ")).converse(echo)


async def test_a_tool_call_reply_is_no_message_and_fails_loudly():
    call = Completion(tool_calls=(ToolCall(id="c1", name="lookup", arguments={}),))

    with pytest.raises(SimulatedUserReplyError, match=r"turn 1 with tool calls \['lookup'\]"):
        await user(ScriptedProvider(call)).converse(echo)


async def test_an_agent_reply_that_is_not_text_fails_loudly():
    async def agent(message: str) -> object:
        return {"text": message}

    with pytest.raises(SimulatedUserError, match="returned dict at turn 1; expected"):
        await user(ScriptedProvider("hello")).converse(agent)  # type: ignore[arg-type]


def test_a_turn_limit_below_one_is_refused():
    with pytest.raises(SimulatedUserError, match=r"max_turns=0.*max_turns=1 or more"):
        SimulatedUser(persona="a customer", goal="a refund", max_turns=0)


def test_an_empty_persona_is_refused():
    with pytest.raises(SimulatedUserError, match="persona must be a non-empty text"):
        SimulatedUser(persona=" ", goal="a refund")


async def test_the_transcript_keeps_the_contract_shape():
    simulated = SimulatedUser(persona="p", goal="g", provider=ScriptedProvider("hi"), max_turns=1)

    transcript = await simulated.converse(lambda message: "hello")

    assert transcript.to_dict() == {
        "persona": "p",
        "goal": "g",
        "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        "turns": 1,
        "stopped_because": "max_turns",
        "done_reason": "",
    }


async def test_each_transcript_is_handed_to_on_transcript():
    kept: list[Transcript] = []
    simulated = user(ScriptedProvider("hello", "[DONE]"), on_transcript=kept.append)

    transcript = await simulated.converse(echo)

    assert kept == [transcript]


async def test_an_error_mid_conversation_hands_on_the_conversation_so_far():
    kept: list[Transcript] = []
    simulated = user(ScriptedProvider("hello", "still there?"), on_transcript=kept.append)

    async def agent(message: str) -> str:
        if message == "still there?":
            raise RuntimeError("the tool server went away\nsecond line")
        return f"echo: {message}"

    with pytest.raises(RuntimeError, match="the tool server went away"):
        await simulated.converse(agent)

    [transcript] = kept
    assert (transcript.turns, transcript.stopped_because) == (1, "error")
    assert transcript.done_reason == "RuntimeError: the tool server went away"
    assert transcript.user_messages == ["hello", "still there?"]
    assert transcript.agent_replies == ["echo: hello"]
