"""Unit tests of streaming in pytest_agentctx.traffic.codecs.anthropic_messages (``stream: true``).

``encode_stream`` is checked against real recorded streams (``streams/``, see its README)
and through the real ``anthropic`` SDK, which must build the same message from the stream
as from the whole response. The SDK talks to an ``httpx2.MockTransport``: no socket is
opened. Decoding recorded, encoded and malformed streams is checked for every codec in
``test_codec_contract.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.traffic.codecs import anthropic_messages
from pytest_agentctx.traffic.codecs.base import Completion, Usage
from pytest_agentctx.traffic.codecs.sse import SSEEvent, format_sse, parse_sse

STREAMS = Path(__file__).parent / "streams"
RECORDED = [
    "anthropic_text_and_tool_use.sse",
    "anthropic_text_and_two_tool_uses.sse",
    "anthropic_two_tool_uses_without_input.sse",
]
MESSAGES: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
MODEL = "claude-haiku-4-5"

PARIS = ToolCall(id="toolu_1", name="get_weather", arguments={"city": "Paris"})
LYON = ToolCall(id="toolu_2", name="get_weather", arguments={"city": "Lyon"})
NOW = ToolCall(id="toolu_3", name="get_time", arguments={})

COMPLETIONS = {
    "text": Completion(content="Sunny in Paris, 21 °C ☀.", model=MODEL, usage=Usage(20, 9)),
    "tool-use": Completion(tool_calls=(PARIS,), model=MODEL, usage=Usage(20, 9)),
    "text-and-tool-uses": Completion(
        content="Checking both.", tool_calls=(PARIS, LYON, NOW), model=MODEL, usage=Usage(30, 40)
    ),
}


def wire(events: list[SSEEvent]) -> list[tuple[str | None, Any]]:
    return [(event.event, event.json()) for event in events]


def encode(completion: Completion) -> list[tuple[str | None, Any]]:
    return wire(anthropic_messages.encode_stream(completion, response_id="msg_1"))


def recorded(name: str) -> list[SSEEvent]:
    return parse_sse((STREAMS / name).read_bytes())


def message_start(input_tokens: int, output_tokens: int) -> tuple[str, Any]:
    return (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            },
        },
    )


def delta(index: int, body: dict[str, Any]) -> tuple[str, Any]:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": body})


PING = ("ping", {"type": "ping"})


# -- encode_stream: the event sequence -----------------------------------------------


def test_encode_stream_of_a_text_reply_is_the_event_sequence_anthropic_sends():
    completion = Completion(content="Sunny.", model=MODEL, usage=Usage(12, 3))

    assert encode(completion) == [
        message_start(12, 1),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        PING,
        delta(0, {"type": "text_delta", "text": "Sunny"}),
        delta(0, {"type": "text_delta", "text": "."}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"input_tokens": 12, "output_tokens": 3},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def test_encode_stream_of_a_tool_use_streams_its_input_after_an_empty_fragment():
    events = encode(Completion(tool_calls=(PARIS,), model=MODEL))

    assert events[1:11] == [
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "get_weather",
                    "input": {},
                },
            },
        ),
        PING,
        delta(0, {"type": "input_json_delta", "partial_json": ""}),
        delta(0, {"type": "input_json_delta", "partial_json": '{"'}),
        delta(0, {"type": "input_json_delta", "partial_json": "city"}),
        delta(0, {"type": "input_json_delta", "partial_json": '":'}),
        delta(0, {"type": "input_json_delta", "partial_json": ' "'}),
        delta(0, {"type": "input_json_delta", "partial_json": "Paris"}),
        delta(0, {"type": "input_json_delta", "partial_json": '"}'}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ]


def test_encode_stream_of_a_tool_use_without_input_sends_only_the_empty_fragment():
    events = encode(Completion(tool_calls=(NOW,), model=MODEL))

    assert [data for name, data in events if name == "content_block_delta"] == [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        }
    ]


def test_encode_stream_numbers_the_text_block_then_one_block_per_tool_use():
    events = encode(COMPLETIONS["text-and-tool-uses"])

    assert [
        (data["index"], data["content_block"]["type"])
        for name, data in events
        if name == "content_block_start"
    ] == [(0, "text"), (1, "tool_use"), (2, "tool_use"), (3, "tool_use")]


def test_encode_stream_sends_one_ping_after_the_first_block_starts():
    names = [name for name, _ in encode(COMPLETIONS["text-and-tool-uses"])]

    assert (names.count("ping"), names[1:3]) == (1, ["content_block_start", "ping"])


def test_encode_stream_of_an_empty_reply_sends_the_ping_after_message_start():
    names = [name for name, _ in encode(Completion(content="", model=MODEL))]

    assert names == ["message_start", "ping", "message_delta", "message_stop"]


def test_encode_stream_reports_the_full_usage_and_the_stop_reason_in_message_delta():
    match encode(COMPLETIONS["text-and-tool-uses"]):
        case [*_, ("message_delta", {"delta": stop, "usage": usage}), ("message_stop", _)]:
            assert (stop, usage) == (
                {"stop_reason": "tool_use", "stop_sequence": None},
                {"input_tokens": 30, "output_tokens": 40},
            )
        case events:
            pytest.fail(f"no message_delta before message_stop: {events}")


def test_encode_stream_keeps_an_explicit_stop_reason():
    events = encode(Completion(content="Sunny and", stop_reason="max_tokens"))

    assert events[-2][1]["delta"]["stop_reason"] == "max_tokens"


def test_encode_stream_fills_an_unknown_model_and_zero_usage():
    events = encode(Completion(content="Hi"))

    assert events[0][1]["message"]["model"] == "unknown"
    assert events[-2][1]["usage"] == {"input_tokens": 0, "output_tokens": 0}


def test_encode_stream_names_every_event_after_the_type_of_its_data():
    events = encode(COMPLETIONS["text-and-tool-uses"])

    assert [name for name, data in events if name != data["type"]] == []


# -- encode_stream against recorded streams -----------------------------------------


def _shape(events: list[SSEEvent], *, pings: bool) -> list[tuple[Any, ...]]:
    """Event names with block indexes and kinds; runs of one kind of delta count once."""
    shape: list[tuple[Any, ...]] = []
    for event in events:
        if event.event == "ping" and not pings:
            continue
        data = event.json()
        kind = data.get("content_block", data.get("delta", {})).get("type")
        step = (event.event, data.get("index"), kind)
        if not shape or shape[-1] != step or event.event != "content_block_delta":
            shape.append(step)
    return shape


def _field_paths(value: Any, prefix: str = "") -> set[str]:
    if not isinstance(value, dict):
        return set()
    paths = set()
    for key, item in value.items():
        path = f"{prefix}.{key}"
        paths |= {path} | _field_paths(item, path)
    return paths


def _reencoded(events: list[SSEEvent]) -> list[SSEEvent]:
    completion = anthropic_messages.decode_stream(events)
    return anthropic_messages.encode_stream(completion, response_id=completion.response_id or "")


@pytest.mark.parametrize("name", RECORDED)
def test_encode_stream_has_the_block_structure_of_a_recorded_stream(name):
    events = recorded(name)

    assert _shape(_reencoded(events), pings=False) == _shape(events, pings=False)


@pytest.mark.parametrize(
    "name", ["anthropic_text_and_two_tool_uses.sse", "anthropic_two_tool_uses_without_input.sse"]
)
def test_encode_stream_puts_the_ping_where_recent_streams_have_it(name):
    events = recorded(name)

    assert _shape(_reencoded(events), pings=True) == _shape(events, pings=True)


@pytest.mark.parametrize("name", RECORDED)
def test_encode_stream_writes_only_fields_that_anthropic_writes(name):
    events = recorded(name)
    real: dict[str | None, set[str]] = {}
    for event in events:
        real.setdefault(event.event, set()).update(_field_paths(event.json()))

    extra = {
        (event.event, path)
        for event in _reencoded(events)
        for path in _field_paths(event.json()) - real.get(event.event, set())
    }

    assert extra == set()


# -- decode_stream -------------------------------------------------------------------


def _event(kind: str, **fields: Any) -> SSEEvent:
    return SSEEvent(kind, json.dumps({"type": kind, **fields}))


def test_decode_stream_skips_thinking_blocks():
    events = [
        _event("message_start", message={"id": "msg_1", "model": MODEL, "usage": {}}),
        _event("content_block_start", index=0, content_block={"type": "thinking", "thinking": ""}),
        _event("content_block_delta", index=0, delta={"type": "thinking_delta", "thinking": "Hm."}),
        _event("content_block_start", index=1, content_block={"type": "text", "text": ""}),
        _event("content_block_delta", index=1, delta={"type": "text_delta", "text": "Hi."}),
        _event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 5}),
    ]

    match anthropic_messages.decode_stream(events):
        case Completion(content="Hi.", tool_calls=(), usage=Usage(0, 5), stop_reason="end_turn"):
            pass
        case other:
            pytest.fail(f"unexpected completion: {other}")


def test_decode_stream_keeps_message_start_input_tokens_that_message_delta_omits():
    events = [
        _event(
            "message_start", message={"id": "m", "usage": {"input_tokens": 40, "output_tokens": 1}}
        ),
        _event("message_delta", delta={"stop_reason": "end_turn"}, usage={"output_tokens": 9}),
    ]

    assert anthropic_messages.decode_stream(events).usage == Usage(40, 9)


def test_decode_stream_counts_cached_input_tokens_as_input():
    events = [
        _event(
            "message_start",
            message={
                "id": "m",
                "usage": {
                    "input_tokens": 4,
                    "cache_read_input_tokens": 100,
                    "cache_creation_input_tokens": 10,
                    "output_tokens": 1,
                },
            },
        ),
    ]

    assert anthropic_messages.decode_stream(events).usage == Usage(
        114, 1, cache_read_tokens=100, cache_write_tokens=10
    )


# -- through the real anthropic SDK --------------------------------------------------


def _serving(completion: Completion) -> httpx2.MockTransport:
    """A transport that answers with ``completion``, streamed if the request asks."""

    def handle(request: httpx2.Request) -> httpx2.Response:
        if json.loads(request.content).get("stream"):
            events = anthropic_messages.encode_stream(completion, response_id="msg_1")
            return httpx2.Response(
                200,
                headers={"content-type": "text/event-stream; charset=utf-8"},
                content=format_sse(events),
            )
        response = anthropic_messages.encode_response(completion, response_id="msg_1")
        return httpx2.Response(200, json=response)

    return httpx2.MockTransport(handle)


def _client(completion: Completion) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        api_key="sk-test",
        base_url="http://127.0.0.1:9",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=_serving(completion)),
    )


def _essentials(message: Any) -> tuple[Any, ...]:
    blocks = [block.model_dump(exclude_none=True) for block in message.content]
    usage = (message.usage.input_tokens, message.usage.output_tokens)
    return message.id, message.model, blocks, message.stop_reason, usage


@pytest.mark.parametrize("completion", COMPLETIONS.values(), ids=list(COMPLETIONS))
async def test_the_anthropic_sdk_stream_helper_builds_the_whole_message(completion):
    async with _client(completion) as client:
        whole = await client.messages.create(model=MODEL, max_tokens=100, messages=MESSAGES)
        async with client.messages.stream(model=MODEL, max_tokens=100, messages=MESSAGES) as stream:
            final = await stream.get_final_message()

    assert _essentials(final) == _essentials(whole)


@pytest.mark.parametrize("completion", COMPLETIONS.values(), ids=list(COMPLETIONS))
async def test_the_anthropic_sdk_reads_every_streamed_event_but_the_ping(completion):
    async with _client(completion) as client:
        stream = await client.messages.create(
            model=MODEL, max_tokens=100, messages=MESSAGES, stream=True
        )
        kinds = [event.type async for event in stream]

    assert kinds == [name for name, _ in encode(completion) if name != "ping"]


async def test_the_anthropic_sdk_accumulates_the_streamed_text_deltas():
    completion = COMPLETIONS["text"]

    async with (
        _client(completion) as client,
        client.messages.stream(model=MODEL, max_tokens=100, messages=MESSAGES) as stream,
    ):
        pieces = [text async for text in stream.text_stream]

    assert (len(pieces) > 1, "".join(pieces)) == (True, completion.content)
