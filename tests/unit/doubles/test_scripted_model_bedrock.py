"""Laws of the scripted models' Bedrock answers (doubles.scripted_model): whatever is
scripted, the JSON answer and the event-stream answer of one reply (Converse and
ConverseStream; InvokeModel and InvokeModelWithResponseStream) read back, through the wire
bytes, as the same completion."""

from __future__ import annotations

import json

from hypothesis import assume, given, strategies as st

from pytest_agentctx.doubles.scripted_model import ScriptedModel
from pytest_agentctx.traffic.codecs import bedrock
from pytest_agentctx.traffic.codecs.base import Completion
from pytest_agentctx.traffic.codecs.eventstream import decode_messages, encode_message

MODEL = "us.anthropic.claude-3-5-haiku-20241022-v1%3A0"
CONVERSE = json.dumps({"messages": [{"role": "user", "content": [{"text": "Hi"}]}]}).encode()
INVOKE = json.dumps(
    {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 50,
        "messages": [{"role": "user", "content": "Hi"}],
    }
).encode()

texts = st.none() | st.text(min_size=1, max_size=60)
values = st.integers() | st.text(max_size=12) | st.booleans()
arguments = st.dictionaries(st.text(min_size=1, max_size=8), values, max_size=3)
calls = st.lists(st.tuples(st.from_regex(r"[a-z_]{1,12}", fullmatch=True), arguments), max_size=2)


def read_back(completion: Completion) -> tuple[object, ...]:
    return (
        completion.content,
        [(call.name, dict(call.arguments)) for call in completion.tool_calls],
        completion.usage,
        completion.stop_reason,
    )


def answers(text, tool_calls, plain_path: str, stream_path: str, body: bytes):
    model = ScriptedModel()
    for _ in range(2):
        model.reply(text, tool_calls=tool_calls, usage={"input_tokens": 7, "output_tokens": 3})
    plain = model.answer(plain_path, body)
    streamed = model.answer(stream_path, body)
    assert plain is not None
    assert streamed is not None
    assert plain.response is not None
    wire = b"".join(encode_message(message) for message in streamed.event_messages())
    return plain.response, decode_messages(wire)


@given(texts, calls)
def test_converse_and_its_stream_read_back_as_one_reply(text, tool_calls):
    assume(text is not None or tool_calls)

    response, messages = answers(
        text, tool_calls, f"/model/{MODEL}/converse", f"/model/{MODEL}/converse-stream", CONVERSE
    )

    assert read_back(bedrock.decode_stream(messages)) == read_back(
        bedrock.decode_response(response)
    )


@given(texts, calls)
def test_invoke_model_and_its_stream_read_back_as_one_reply(text, tool_calls):
    assume(text is not None or tool_calls)

    response, messages = answers(
        text,
        tool_calls,
        f"/model/{MODEL}/invoke",
        f"/model/{MODEL}/invoke-with-response-stream",
        INVOKE,
    )

    assert read_back(bedrock.decode_stream(messages)) == read_back(
        bedrock.decode_response(response)
    )
