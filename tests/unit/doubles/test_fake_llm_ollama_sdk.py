"""The fake model (:class:`FakeLLM`) answering the ``ollama`` SDK on Ollama's native
``/api/chat``: a JSON reply for ``stream=False``, an NDJSON stream otherwise (a stream of
server-sent events would not be read by the SDK), at the transport: nothing leaves the
process."""

from __future__ import annotations

from collections.abc import Iterator

import ollama
import pytest

from pytest_agentctx import build_contexts

MODEL = "llama3.1"
QUESTION = [{"role": "user", "content": "Weather in Paris?"}]


@pytest.fixture
def client() -> Iterator[ollama.Client]:
    sdk = ollama.Client(host="http://127.0.0.1:11434")
    yield sdk
    sdk.close()  # type: ignore[no-untyped-call]  # ollama 0.6 leaves it unannotated


def test_the_sdk_reads_a_scripted_reply_as_json(fake, client):
    fake.reply("Sunny in Paris.")

    reply = client.chat(model=MODEL, messages=QUESTION, stream=False)

    assert (reply.message.content, reply.done, reply.done_reason) == (
        "Sunny in Paris.",
        True,
        "stop",
    )


def test_the_sdk_reads_a_scripted_reply_as_an_ndjson_stream(fake, client):
    fake.reply("Sunny in Paris.")

    chunks = list(client.chat(model=MODEL, messages=QUESTION, stream=True))

    assert "".join(chunk.message.content or "" for chunk in chunks) == "Sunny in Paris."
    assert [chunk.done for chunk in chunks][-2:] == [False, True]


def test_a_streamed_tool_call_reaches_the_sdk_and_capture(fake, client):
    fake.reply_tool_call("get_weather", city="Paris")

    chunks = list(client.chat(model=MODEL, messages=QUESTION, stream=True))

    calls = [call for chunk in chunks for call in chunk.message.tool_calls or ()]
    assert [(call.function.name, dict(call.function.arguments)) for call in calls] == [
        ("get_weather", {"city": "Paris"})
    ]
    (context,) = build_contexts(fake.exchanges).contexts
    assert context.iterations[0].metadata["provider"] == "ollama"
