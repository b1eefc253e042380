"""Unit tests of streaming in pytest_agentctx.traffic.codecs.openai_chat (``stream: true``).

``encode_stream`` is checked chunk by chunk against real recorded streams (``streams/``,
see its README), and through the real ``openai`` SDK, which must reassemble the same text
and tool calls from the stream as from the whole response. The SDK talks to an
``httpx2.MockTransport``: no socket is opened. Decoding recorded, encoded and malformed
streams is checked for every codec in ``test_codec_contract.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.traffic.codecs import openai_chat
from pytest_agentctx.traffic.codecs.base import Completion, Usage
from pytest_agentctx.traffic.codecs.sse import DONE, SSEEvent, format_sse, parse_sse

STREAMS = Path(__file__).parent / "streams"
MESSAGES: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]

PARIS = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
LYON = ToolCall(id="call_2", name="get_weather", arguments={"city": "Lyon"})
NOW = ToolCall(id="call_3", name="get_time", arguments={})

COMPLETIONS = {
    "text": Completion(content="Sunny in Paris, 21 °C ☀.", model="gpt-4o-mini"),
    "tool-call": Completion(tool_calls=(PARIS,), model="gpt-4o-mini"),
    "text-and-tool-calls": Completion(
        content="Checking both.", tool_calls=(PARIS, LYON, NOW), model="gpt-4o-mini"
    ),
    "empty-text": Completion(content="", model="gpt-4o-mini"),
}


def chunk(delta: dict[str, Any], finish_reason: str | None = None, **extra: Any) -> dict[str, Any]:
    """A chunk as OpenAI streams it, for the completion ``chatcmpl_1`` of ``gpt-4o-mini``."""
    return {
        "id": "chatcmpl_1",
        "object": "chat.completion.chunk",
        "created": 7,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
        **extra,
    }


def wire(events: list[SSEEvent]) -> list[Any]:
    """Each event's data, parsed unless it is ``[DONE]``."""
    return [event.data if event.data == DONE else event.json() for event in events]


def encode(completion: Completion, *, include_usage: bool = False) -> list[Any]:
    return wire(
        openai_chat.encode_stream(
            completion, response_id="chatcmpl_1", created=7, include_usage=include_usage
        )
    )


def recorded(name: str) -> list[SSEEvent]:
    return parse_sse((STREAMS / name).read_bytes())


# -- encode_stream: the chunk sequence -----------------------------------------------


def test_encode_stream_of_a_text_reply_sends_the_role_then_the_text_in_pieces():
    assert encode(Completion(content="Sunny, 21 °C.", model="gpt-4o-mini")) == [
        chunk({"role": "assistant", "content": "", "refusal": None}),
        chunk({"content": "Sunny"}),
        chunk({"content": ","}),
        chunk({"content": " 21"}),
        chunk({"content": " °"}),
        chunk({"content": "C"}),
        chunk({"content": "."}),
        chunk({}, "stop"),
        DONE,
    ]


def test_encode_stream_of_a_tool_call_announces_it_with_the_role_then_streams_arguments():
    assert encode(COMPLETIONS["tool-call"]) == [
        chunk(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ],
                "refusal": None,
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "city"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '":"'}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "Paris"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"}'}}]}),
        chunk({}, "tool_calls"),
        DONE,
    ]


def test_encode_stream_announces_each_further_tool_call_in_its_own_chunk():
    chunks = encode(Completion(tool_calls=(PARIS, NOW), model="gpt-4o-mini"))

    assert chunks[-4:] == [
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 1,
                        "id": "call_3",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": ""},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
        DONE,
    ]


def test_encode_stream_of_text_and_a_tool_call_sends_the_text_first():
    chunks = encode(Completion(content="On it.", tool_calls=(NOW,), model="gpt-4o-mini"))

    assert chunks == [
        chunk({"role": "assistant", "content": "", "refusal": None}),
        chunk({"content": "On"}),
        chunk({"content": " it"}),
        chunk({"content": "."}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_3",
                        "type": "function",
                        "function": {"name": "get_time", "arguments": ""},
                    }
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}),
        chunk({}, "tool_calls"),
        DONE,
    ]


def test_encode_stream_with_include_usage_adds_a_usage_chunk_and_null_usage_elsewhere():
    chunks = encode(
        Completion(content="Hi", model="gpt-4o-mini", usage=Usage(12, 3)), include_usage=True
    )

    assert chunks == [
        chunk({"role": "assistant", "content": "", "refusal": None}, usage=None),
        chunk({"content": "Hi"}, usage=None),
        chunk({}, "stop", usage=None),
        {
            "id": "chatcmpl_1",
            "object": "chat.completion.chunk",
            "created": 7,
            "model": "gpt-4o-mini",
            "choices": [],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
        },
        DONE,
    ]


def test_encode_stream_without_include_usage_has_no_usage_field():
    chunks = encode(Completion(content="Hi", usage=Usage(12, 3)))

    assert [c for c in chunks if c != DONE and "usage" in c] == []


def test_encode_stream_with_include_usage_and_no_usage_reports_zero_tokens():
    chunks = encode(Completion(content="Hi"), include_usage=True)

    assert chunks[-2]["usage"] == {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}


def test_encode_stream_keeps_an_explicit_finish_reason():
    chunks = encode(Completion(content="Sunny and", stop_reason="length"))

    assert chunks[-2]["choices"] == [
        {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "length"}
    ]


def test_encode_stream_fills_an_unknown_model():
    chunks = encode(Completion(content="Hi"))

    assert {c["model"] for c in chunks if c != DONE} == {"unknown"}


def test_encode_stream_writes_compact_json_and_unicode_as_is():
    events = openai_chat.encode_stream(Completion(content="°"), response_id="c", created=0)

    assert events[1] == SSEEvent(
        None,
        '{"id":"c","object":"chat.completion.chunk","created":0,"model":"unknown",'
        '"choices":[{"index":0,"delta":{"content":"°"},"logprobs":null,"finish_reason":null}]}',
    )


def test_encode_stream_events_are_data_only():
    events = openai_chat.encode_stream(COMPLETIONS["text-and-tool-calls"], response_id="c")

    assert {event.event for event in events} == {None}


# -- encode_stream against recorded streams -----------------------------------------

_EXTRA_FIELDS = {"obfuscation", "system_fingerprint", "service_tier"}
_USAGE_FIELDS = ("prompt_tokens", "completion_tokens", "total_tokens")


def _essentials(events: list[SSEEvent]) -> list[Any]:
    """The chunks without the fields the encoder does not write (fingerprints, details)."""
    result: list[Any] = []
    for data in wire(events):
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k not in _EXTRA_FIELDS}
            if isinstance(data.get("usage"), dict):
                data["usage"] = {k: data["usage"][k] for k in _USAGE_FIELDS}
        result.append(data)
    return result


@pytest.mark.parametrize(
    "name",
    [
        "openai_tool_call_chunks.sse",
        "openai_tool_call_with_usage.sse",
        "openai_text_with_usage.sse",
    ],
)
def test_encode_stream_reproduces_a_recorded_stream_chunk_for_chunk(name):
    events = recorded(name)
    first = events[0].json()
    completion = openai_chat.decode_stream(events)

    encoded = openai_chat.encode_stream(
        completion,
        response_id=first["id"],
        created=first["created"],
        include_usage="usage" in first,
    )

    assert _essentials(encoded) == _essentials(events)


# -- decode_stream -------------------------------------------------------------------


def test_decode_stream_stops_at_done():
    events = [*recorded("openai_text_with_usage.sse"), SSEEvent(None, "not json")]

    assert openai_chat.decode_stream(events).content == "The capital of the UK is London."


def test_decode_stream_concatenates_tool_name_fragments_as_the_sdk_does():
    events = [
        SSEEvent(
            None,
            json.dumps(
                chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "get_"}}]})
            ),
        ),
        SSEEvent(
            None,
            json.dumps(
                chunk(
                    {
                        "tool_calls": [
                            {"index": 0, "function": {"name": "weather", "arguments": "{}"}}
                        ]
                    }
                )
            ),
        ),
    ]

    match openai_chat.decode_stream(events):
        case Completion(tool_calls=(ToolCall(id="c1", name="get_weather", arguments={}),)):
            pass
        case other:
            pytest.fail(f"unexpected completion: {other}")


def _tool_chunks(*deltas: dict[str, Any]) -> list[SSEEvent]:
    """One chunk per tool-call delta, then the finish reason and ``[DONE]``."""
    events = [SSEEvent(None, json.dumps(chunk({"tool_calls": [delta]}))) for delta in deltas]
    events.append(SSEEvent(None, json.dumps(chunk({}, "tool_calls"))))
    return [*events, SSEEvent(None, DONE)]


PLUS_MINUS = (
    ToolCall(id="Xp1", name="plus", arguments={"a": 2, "b": 3}),
    ToolCall(id="Xm2", name="minus", arguments={"a": 9, "b": 4}),
)


def test_decode_stream_keeps_calls_without_an_index_apart_by_their_id():
    # Mistral streams each call whole, with an id and no index.
    events = _tool_chunks(
        {"id": "Xp1", "function": {"name": "plus", "arguments": '{"a": 2, "b": 3}'}},
        {"id": "Xm2", "function": {"name": "minus", "arguments": '{"a": 9, "b": 4}'}},
    )

    assert openai_chat.decode_stream(events).tool_calls == PLUS_MINUS


def test_decode_stream_joins_fragments_without_an_index_or_id_to_the_last_call():
    events = _tool_chunks(
        {"id": "Xp1", "function": {"name": "plus", "arguments": '{"a": 2,'}},
        {"function": {"arguments": ' "b": 3}'}},
        {"id": "Xm2", "function": {"name": "minus", "arguments": ""}},
        {"function": {"arguments": '{"a": 9, "b": 4}'}},
    )

    assert openai_chat.decode_stream(events).tool_calls == PLUS_MINUS


def test_decode_stream_keeps_calls_apart_when_a_server_numbers_them_all_zero():
    events = _tool_chunks(
        {"index": 0, "id": "Xp1", "function": {"name": "plus", "arguments": ""}},
        {"index": 0, "function": {"arguments": '{"a": 2, "b": 3}'}},
        {"index": 0, "id": "Xm2", "function": {"name": "minus", "arguments": ""}},
        {"index": 0, "function": {"arguments": '{"a": 9, "b": 4}'}},
    )

    assert openai_chat.decode_stream(events).tool_calls == PLUS_MINUS


def test_decode_stream_starts_a_new_call_at_a_new_index_without_an_id():
    events = _tool_chunks(
        {"index": 0, "id": "Xp1", "function": {"name": "plus", "arguments": '{"a": 2, "b": 3}'}},
        {"index": 1, "function": {"name": "minus", "arguments": '{"a": 9, "b": 4}'}},
        {"index": 1, "id": "Xm2"},
    )

    assert openai_chat.decode_stream(events).tool_calls == PLUS_MINUS


# -- through the real openai SDK -----------------------------------------------------


def _serving(completion: Completion) -> httpx2.MockTransport:
    """A transport that answers with ``completion``, streamed if the request asks."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content)
        if body.get("stream"):
            options = body.get("stream_options") or {}
            events = openai_chat.encode_stream(
                completion,
                response_id="chatcmpl_1",
                include_usage=bool(options.get("include_usage")),
            )
            return httpx2.Response(
                200,
                headers={"content-type": "text/event-stream; charset=utf-8"},
                content=format_sse(events),
            )
        response = openai_chat.encode_response(completion, response_id="chatcmpl_1")
        return httpx2.Response(200, json=response)

    return httpx2.MockTransport(handle)


def _client(completion: Completion) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key="sk-test",
        base_url="http://127.0.0.1:9/v1",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=_serving(completion)),
    )


def _reassemble(chunks: list[Any]) -> tuple[str | None, list[tuple[str, str, str]]]:
    """Text and tool calls from streamed chunks, accumulated as SDK users do."""
    text: str | None = None
    calls: dict[int, list[str]] = {}
    for item in chunks:
        for choice in item.choices:
            if choice.delta.content is not None:
                text = (text or "") + choice.delta.content
            for call in choice.delta.tool_calls or []:
                slot = calls.setdefault(call.index, ["", "", ""])
                slot[0] += call.id or ""
                slot[1] += call.function.name or ""
                slot[2] += call.function.arguments or ""
    return text, [(i, n, a) for i, n, a in (calls[k] for k in sorted(calls))]


def _whole(message: Any) -> tuple[str | None, list[tuple[str, str, str]]]:
    calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]
    return message.content, calls


@pytest.mark.parametrize("completion", COMPLETIONS.values(), ids=list(COMPLETIONS))
async def test_the_openai_sdk_reassembles_a_stream_into_the_whole_reply(completion):
    async with _client(completion) as client:
        whole = await client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
        stream = await client.chat.completions.create(
            model="gpt-4o-mini", messages=MESSAGES, stream=True
        )
        chunks = [item async for item in stream]

    assert _reassemble(chunks) == _whole(whole.choices[0].message)


@pytest.mark.parametrize("completion", COMPLETIONS.values(), ids=list(COMPLETIONS))
async def test_the_openai_sdk_stream_helper_gives_the_whole_reply_as_its_final_completion(
    completion,
):
    async with _client(completion) as client:
        whole = await client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES)
        async with client.chat.completions.stream(model="gpt-4o-mini", messages=MESSAGES) as stream:
            final = await stream.get_final_completion()

    assert (_whole(final.choices[0].message), final.choices[0].finish_reason) == (
        _whole(whole.choices[0].message),
        whole.choices[0].finish_reason,
    )


async def test_the_openai_sdk_reads_the_usage_chunk_when_the_request_asks_for_it():
    completion = Completion(content="Hi", model="gpt-4o-mini", usage=Usage(12, 3))

    async with _client(completion) as client:
        stream = await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
        usages = [item.usage async for item in stream if item.usage is not None]

    match usages:
        case [openai.types.CompletionUsage(prompt_tokens=12, completion_tokens=3, total_tokens=15)]:
            pass
        case _:
            pytest.fail(f"expected one usage chunk, got {usages}")
