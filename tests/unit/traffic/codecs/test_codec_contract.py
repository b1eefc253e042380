"""The contract every wire-format codec keeps, checked once for each of them.

Each codec (``openai_chat``, ``openai_responses``, ``anthropic_messages``, ``gemini``,
``bedrock``) writes neutral messages as a request and reads them back, writes a
:class:`Completion` as a response, whole or streamed, and reads it back, and refuses JSON
of another shape with a :class:`CodecError` that names the codec and what is wrong. The
table ``WIRES`` holds what differs between the codecs (models, call ids, stop reasons,
example bodies, a stream's framing) and ``codec_examples.py`` the malformed bodies and
recorded streams of each; the tests of wire details that only one provider has stay in
each codec's own test file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import pytest
from codec_examples import (
    MALFORMED_REQUESTS,
    MALFORMED_RESPONSES,
    MALFORMED_STREAMS,
    RECORDED_STREAMS,
)

from pytest_agentctx import CodecError, Completion, ToolCall, ToolSpec, Usage
from pytest_agentctx.context.model import INVALID_ARGUMENTS_KEY
from pytest_agentctx.traffic.codecs import (
    DecodedRequest,
    anthropic_messages,
    bedrock,
    gemini,
    openai_chat,
    openai_responses,
)
from pytest_agentctx.traffic.codecs.eventstream import decode_messages, encode_messages
from pytest_agentctx.traffic.codecs.sse import format_sse, parse_sse


class StreamingCodec(Protocol):
    """What a codec module provides: the four functions of ``Codec`` and the two of streams."""

    def encode_request(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> dict[str, Any]: ...

    def decode_request(self, body: Mapping[str, Any]) -> DecodedRequest: ...

    def decode_response(self, body: Mapping[str, Any]) -> Completion: ...

    def encode_response(
        self, completion: Completion, *, response_id: str, created: int = 0
    ) -> dict[str, Any]: ...

    # server-sent events, or AWS event-stream messages (bedrock)
    def encode_stream(
        self, completion: Completion, *, response_id: str, created: int = 0
    ) -> list[Any]: ...

    def decode_stream(self, events: Any) -> Completion: ...


WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "The city's name."}},
    "required": ["city"],
    "additionalProperties": False,
}
WEATHER_SPEC = ToolSpec("get_weather", "Current weather for a city.", WEATHER_SCHEMA)
REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [],
    "encrypted_content": "gAAAAABp-encrypted",
}


def _gemini_call_id(name: str, arguments: dict[str, Any], index: int) -> str:
    return gemini.synthetic_call_id(name, arguments, index)


def _call_id(prefix: str) -> Callable[[str, dict[str, Any], int], str]:
    return lambda name, arguments, index: f"{prefix}{index + 1}"


@dataclass(frozen=True)
class Wire:
    """One codec and what its wire format does its own way."""

    codec: StreamingCodec
    name: str
    model: str
    #: The id of the ``index``-th call of a reply (Gemini sends none: the codec makes one).
    call_id: Callable[[str, dict[str, Any], int], str]
    #: The stop reason of a reply without tool calls, and of one with tool calls.
    text_stop: str
    tool_stop: str
    #: Whether an empty text ("") comes back as "" (or as no text at all).
    keeps_empty_text: bool
    #: A role the codec does not know.
    foreign_role: str
    #: A conversation in neutral form that the wire carries whole, and request options.
    conversation: list[dict[str, Any]]
    request_options: dict[str, Any] = field(default_factory=dict)
    #: Keyword arguments of encode_stream that make it send everything the response has.
    stream_options: dict[str, Any] = field(default_factory=dict)
    #: A request body that asks for a stream (None: the URL says it, not the body).
    stream_request: dict[str, Any] | None = None
    #: The response field of the usage.
    usage_field: str = "usage"
    #: A reply whose one tool call has arguments that are not JSON, and those arguments.
    invalid_arguments: tuple[dict[str, Any], str] | None = None
    #: A stop reason of the wire's own, and where encode_response writes it.
    stop_reason: tuple[str, Callable[[dict[str, Any]], Any]] | None = None
    #: Completions of this wire only, for the round trips.
    extra_completions: dict[str, Completion] = field(default_factory=dict)
    #: Whether a response names its model and id (Converse names neither: the URL names
    #: the model, a header the request).
    names_reply: bool = True
    #: A stream's events read from its bytes: server-sent events, or AWS event-stream
    #: messages.
    unframe: Callable[[bytes], list[Any]] = parse_sse

    def call(self, name: str, arguments: dict[str, Any], index: int) -> ToolCall:
        return ToolCall(id=self.call_id(name, arguments, index), name=name, arguments=arguments)

    def encode_stream(self, completion: Completion, response_id: str) -> list[Any]:
        encode: Callable[..., list[Any]] = self.codec.encode_stream
        return encode(completion, response_id=response_id, **self.stream_options)


def _chat_conversation() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You answer weather questions."},
        {"role": "user", "content": "Weather in Paris and Lyon?"},
        {
            "role": "assistant",
            "content": "Looking it up.",
            "tool_calls": [
                {"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}},
                {"id": "call_2", "name": "get_weather", "arguments": {"city": "Lyon"}},
            ],
        },
        {"role": "tool", "content": "18 degrees celsius in Paris", "tool_call_id": "call_1"},
        {"role": "tool", "content": "Weather service down", "tool_call_id": "call_2"},
        {"role": "assistant", "content": "Paris: 18 degrees; Lyon: unknown."},
    ]


def _anthropic_conversation() -> list[dict[str, Any]]:
    # without the tool result's ``name``, which the Messages wire has no place for
    return [
        {"role": "system", "content": "You answer weather questions."},
        {"role": "user", "content": "Weather in Paris and Lyon?"},
        {
            "role": "assistant",
            "content": "Looking it up.",
            "tool_calls": [
                {"id": "toolu_1", "name": "get_weather", "arguments": {"city": "Paris"}},
                {"id": "toolu_2", "name": "get_weather", "arguments": {"city": "Lyon"}},
            ],
        },
        {"role": "tool", "content": "18 degrees celsius in Paris", "tool_call_id": "toolu_1"},
        {
            "role": "tool",
            "content": "Tool get_weather failed: TimeoutError: down",
            "tool_call_id": "toolu_2",
            "is_error": True,
        },
        {"role": "assistant", "content": "Paris: 18 degrees; Lyon: unknown."},
    ]


def _responses_conversation() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You answer weather questions."},
        {"role": "user", "content": "Weather in Paris and Lyon?"},
        {
            "role": "assistant",
            "content": "Checking both.",
            "tool_calls": [
                {"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}},
                {"id": "call_2", "name": "get_weather", "arguments": {"city": "Lyon"}},
            ],
            "reasoning": [REASONING],
        },
        {"role": "tool", "content": "18C", "tool_call_id": "call_1"},
        {"role": "tool", "content": "16C", "tool_call_id": "call_2"},
        {"role": "assistant", "content": "18C in Paris, 16C in Lyon."},
        {"role": "user", "content": "Thanks!"},
    ]


def _gemini_conversation() -> list[dict[str, Any]]:
    # Gemini sends no call ids (the codec makes them) and names each tool result
    paris = _gemini_call_id("get_weather", {"city": "Paris"}, 0)
    lyon = _gemini_call_id("get_weather", {"city": "Lyon"}, 1)
    return [
        {"role": "system", "content": "You answer weather questions."},
        {"role": "user", "content": "Weather in Paris and Lyon?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": paris, "name": "get_weather", "arguments": {"city": "Paris"}},
                {"id": lyon, "name": "get_weather", "arguments": {"city": "Lyon"}},
            ],
        },
        {"role": "tool", "content": "Sunny", "tool_call_id": paris, "name": "get_weather"},
        {"role": "tool", "content": "Rainy", "tool_call_id": lyon, "name": "get_weather"},
    ]


def _bedrock_conversation() -> list[dict[str, Any]]:
    # Converse's tool results carry no name either; the reasoning goes back with its reply
    conversation = _anthropic_conversation()
    for message in conversation:
        for call in message.get("tool_calls", ()):
            call["id"] = call["id"].replace("toolu_", "tooluse_")
        if message.get("tool_call_id"):
            message["tool_call_id"] = message["tool_call_id"].replace("toolu_", "tooluse_")
    conversation[2]["reasoning"] = [BEDROCK_REASONING]
    return conversation


BEDROCK_REASONING = {
    "type": "bedrock_reasoning",
    "reasoningText": {"text": "Two cities: two calls.", "signature": "EqQBCkgIARABGAIiQL"},
}

WIRES = [
    Wire(
        codec=openai_chat,
        name="openai_chat",
        model="gpt-4o-mini",
        call_id=_call_id("call_"),
        text_stop="stop",
        tool_stop="tool_calls",
        keeps_empty_text=True,
        foreign_role="function",
        conversation=_chat_conversation(),
        request_options={"temperature": 0.2},
        # the usage chunk, so the stream carries what the response does
        stream_options={"include_usage": True},
        stream_request={"model": "gpt-4o-mini", "messages": [], "stream": True},
        invalid_arguments=(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": "gpt-4o-mini",
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {
                                        "name": "get_weather",
                                        "arguments": '{"city": "Paris"',
                                    },
                                }
                            ],
                        },
                        "finish_reason": "tool_calls",
                    }
                ],
            },
            '{"city": "Paris"',
        ),
        stop_reason=("length", lambda body: body["choices"][0]["finish_reason"]),
    ),
    Wire(
        codec=openai_responses,
        name="openai_responses",
        model="gpt-4.1",
        call_id=_call_id("call_"),
        text_stop="completed",
        tool_stop="tool_calls",
        keeps_empty_text=True,
        foreign_role="robot",
        conversation=_responses_conversation(),
        stream_request={"model": "gpt-4.1", "input": [], "stream": True},
        invalid_arguments=(
            {
                "output": [
                    {
                        "type": "function_call",
                        "call_id": "call_1",
                        "name": "get_weather",
                        "arguments": '{"city": "Par',
                    }
                ]
            },
            '{"city": "Par',
        ),
        extra_completions={
            "reasoning-and-tool-call": Completion(
                tool_calls=(
                    ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"}),
                ),
                model="o4-mini",
                reasoning=(REASONING,),
            ),
            "reasoning-and-text": Completion(
                content="42.", model="o4-mini", reasoning=(REASONING,)
            ),
        },
    ),
    Wire(
        codec=anthropic_messages,
        name="anthropic_messages",
        model="claude-haiku-4-5",
        call_id=_call_id("toolu_"),
        text_stop="end_turn",
        tool_stop="tool_use",
        keeps_empty_text=False,
        foreign_role="developer",
        conversation=_anthropic_conversation(),
        request_options={"max_tokens": 512},
        stream_request={"model": "claude-haiku-4-5", "messages": [], "stream": True},
        invalid_arguments=(
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-haiku-4-5",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_user_country",
                        "input": '{"country": "Mex',
                    }
                ],
                "stop_reason": "tool_use",
            },
            '{"country": "Mex',
        ),
        stop_reason=("max_tokens", lambda body: body["stop_reason"]),
    ),
    Wire(
        codec=gemini,
        name="gemini",
        model="gemini-2.5-flash",
        call_id=_gemini_call_id,
        text_stop="STOP",
        tool_stop="STOP",
        keeps_empty_text=False,
        foreign_role="developer",
        conversation=_gemini_conversation(),
        usage_field="usageMetadata",
        invalid_arguments=(
            {
                "candidates": [
                    {"content": {"parts": [{"functionCall": {"name": "f", "args": "{"}}]}}
                ]
            },
            "{",
        ),
        stop_reason=("MAX_TOKENS", lambda body: body["candidates"][0]["finishReason"]),
        extra_completions={
            # a call id that the client gave is sent and read back as it is
            "calls-with-a-given-id": Completion(
                content="Checking.",
                tool_calls=(
                    ToolCall(
                        id=_gemini_call_id("get_weather", {"city": "Paris"}, 0),
                        name="get_weather",
                        arguments={"city": "Paris"},
                    ),
                    ToolCall(id="fc_2", name="get_time", arguments={}),
                ),
                model="gemini-2.5-flash",
                usage=Usage(20, 9),
            ),
        },
    ),
    Wire(
        codec=bedrock,
        name="bedrock",
        model="us.anthropic.claude-sonnet-4-20250514-v1:0",
        call_id=_call_id("tooluse_"),
        text_stop="end_turn",
        tool_stop="tool_use",
        keeps_empty_text=False,
        foreign_role="developer",
        conversation=_bedrock_conversation(),
        request_options={"max_tokens": 512, "temperature": 0.2},
        invalid_arguments=(
            {
                "output": {
                    "message": {
                        "role": "assistant",
                        "content": [
                            {
                                "toolUse": {
                                    "toolUseId": "tooluse_1",
                                    "name": "get_weather",
                                    "input": '{"city": "Par',
                                }
                            }
                        ],
                    }
                },
                "stopReason": "tool_use",
            },
            '{"city": "Par',
        ),
        stop_reason=("max_tokens", lambda body: body["stopReason"]),
        extra_completions={
            "reasoning-and-text": Completion(content="42.", reasoning=(BEDROCK_REASONING,)),
            "redacted-reasoning-and-tool-call": Completion(
                tool_calls=(
                    ToolCall(id="tooluse_1", name="get_weather", arguments={"city": "Paris"}),
                ),
                reasoning=({"type": "bedrock_reasoning", "redactedContent": "RXRrRUNrZ0lC"},),
            ),
        },
        names_reply=False,
        unframe=decode_messages,
    ),
]
BY_NAME = {wire.name: wire for wire in WIRES}
EVERY_WIRE = [pytest.param(wire, id=wire.name) for wire in WIRES]


def completions(wire: Wire) -> dict[str, Completion]:
    """Replies of every shape, for ``wire``'s model and call ids."""
    paris = wire.call("get_weather", {"city": "Paris"}, 0)
    lyon = wire.call("get_weather", {"city": "Lyon"}, 1)
    now = wire.call("get_time", {}, 2)
    broken = wire.call("book", {INVALID_ARGUMENTS_KEY: '{"a":'}, 0)
    return {
        "text": Completion(content="Sunny in Paris, 21 °C ☀.", model=wire.model),
        "with-usage": Completion(content="Hi.", model=wire.model, usage=Usage(120, 9)),
        "tool-call": Completion(tool_calls=(paris,), model=wire.model, usage=Usage(20, 9)),
        "parallel-tool-calls": Completion(tool_calls=(paris, lyon, now), model=wire.model),
        "text-and-tool-calls": Completion(
            content="Checking both.",
            tool_calls=(paris, lyon, now),
            model=wire.model,
            usage=Usage(30, 40),
        ),
        "empty-text": Completion(content="", model=wire.model),
        "no-content": Completion(model=wire.model, usage=Usage(3, 0)),
        "invalid-arguments": Completion(tool_calls=(broken,), model=wire.model),
        **wire.extra_completions,
    }


ROUND_TRIPS = [
    pytest.param(wire, name, id=f"{wire.name}-{name}")
    for wire in WIRES
    for name in completions(wire)
]


def read_back(wire: Wire, completion: Completion, response_id: str) -> Completion:
    """What a reply comes back as: stop reason, zero usage and response id filled in."""
    content = completion.content
    if content == "" and not wire.keeps_empty_text:
        content = None
    return replace(
        completion,
        content=content,
        model=completion.model if wire.names_reply else None,
        usage=completion.usage or Usage(),
        stop_reason=completion.stop_reason
        or (wire.tool_stop if completion.tool_calls else wire.text_stop),
        response_id=response_id if wire.names_reply else None,
    )


# -- requests ------------------------------------------------------------------------


@pytest.mark.parametrize("wire", EVERY_WIRE)
def test_encode_request_refuses_an_unknown_role(wire):
    with pytest.raises(
        CodecError,
        match=rf"^{wire.name}\.encode_request: message role '{wire.foreign_role}' is not one of "
        r"system, user, assistant, tool\.$",
    ):
        wire.codec.encode_request(
            model=wire.model, messages=[{"role": wire.foreign_role, "content": "x"}]
        )


@pytest.mark.parametrize("wire", EVERY_WIRE)
def test_decode_request_reads_back_what_encode_request_wrote(wire):
    body = wire.codec.encode_request(
        model=wire.model,
        messages=wire.conversation,
        tools=[WEATHER_SPEC],
        **wire.request_options,
    )

    assert wire.codec.decode_request(body) == DecodedRequest(
        model=wire.model,
        messages=wire.conversation,
        tools=[
            {
                "name": "get_weather",
                "description": "Current weather for a city.",
                "parameters": WEATHER_SCHEMA,
            }
        ],
        stream=False,
    )


@pytest.mark.parametrize(
    "wire", [pytest.param(wire, id=wire.name) for wire in WIRES if wire.stream_request]
)
def test_decode_request_reads_the_stream_flag(wire):
    assert wire.codec.decode_request(wire.stream_request).stream is True


@pytest.mark.parametrize(("name", "body", "message"), MALFORMED_REQUESTS)
def test_decode_request_of_a_malformed_body_is_a_codec_error_saying_what_is_wrong(
    name, body, message
):
    with pytest.raises(CodecError, match=message):
        BY_NAME[name].codec.decode_request(body)


# -- responses -----------------------------------------------------------------------


@pytest.mark.parametrize(("wire", "name"), ROUND_TRIPS)
def test_decode_response_reads_back_what_encode_response_wrote(wire, name):
    completion = completions(wire)[name]

    body = wire.codec.encode_response(completion, response_id="resp_7")

    assert wire.codec.decode_response(body) == read_back(wire, completion, "resp_7")


@pytest.mark.parametrize("wire", EVERY_WIRE)
def test_decode_response_without_usage_has_no_usage(wire):
    body = wire.codec.encode_response(Completion(content="YES"), response_id="resp_1")
    del body[wire.usage_field]

    assert wire.codec.decode_response(body).usage is None


@pytest.mark.parametrize(
    "wire", [pytest.param(wire, id=wire.name) for wire in WIRES if wire.invalid_arguments]
)
def test_decode_response_keeps_invalid_json_arguments_under_the_invalid_key(wire):
    body, raw = wire.invalid_arguments

    (call,) = wire.codec.decode_response(body).tool_calls

    assert call.arguments == {INVALID_ARGUMENTS_KEY: raw}


@pytest.mark.parametrize(
    "wire", [pytest.param(wire, id=wire.name) for wire in WIRES if wire.stop_reason]
)
def test_encode_response_keeps_an_explicit_stop_reason(wire):
    reason, where = wire.stop_reason
    completion = Completion(content="Sunny and", stop_reason=reason)

    body = wire.codec.encode_response(completion, response_id="resp_1")

    assert (where(body), wire.codec.decode_response(body).stop_reason) == (reason, reason)


@pytest.mark.parametrize(("name", "body", "message"), MALFORMED_RESPONSES)
def test_decode_response_of_a_malformed_body_is_a_codec_error_saying_what_is_wrong(
    name, body, message
):
    with pytest.raises(CodecError, match=message):
        BY_NAME[name].codec.decode_response(body)


# -- streams -------------------------------------------------------------------------


@pytest.mark.parametrize(("wire", "name"), ROUND_TRIPS)
def test_decode_stream_reads_what_encode_stream_wrote_as_the_whole_reply(wire, name):
    completion = completions(wire)[name]

    events = wire.encode_stream(completion, "resp_5")

    assert wire.codec.decode_stream(events) == (
        wire.codec.decode_response(wire.codec.encode_response(completion, response_id="resp_5"))
    )
    assert wire.codec.decode_stream(events) == read_back(wire, completion, "resp_5")


@pytest.mark.parametrize("stream", list(RECORDED_STREAMS))
def test_decode_stream_of_a_recorded_stream_gives_the_whole_completion(stream):
    name, raw, completion = RECORDED_STREAMS[stream]
    wire = BY_NAME[name]

    assert wire.codec.decode_stream(wire.unframe(raw())) == completion


def _responses_stream() -> tuple[bytes, Completion]:
    wire = BY_NAME["openai_responses"]
    completion = completions(wire)["tool-call"]
    raw = format_sse(openai_responses.encode_stream(completion, response_id="resp_1"))
    return raw, read_back(wire, completion, "resp_1")


def _recorded(stream: str) -> Callable[[], tuple[bytes, Completion]]:
    _, raw, completion = RECORDED_STREAMS[stream]
    return lambda: (raw(), completion)


# One stream of each wire, and the reply it is.
RAW_STREAMS: dict[str, Callable[[], tuple[bytes, Completion]]] = {
    "openai_chat": _recorded("openai_chat-text-with-usage"),
    "openai_responses": _responses_stream,
    "anthropic_messages": _recorded("anthropic_messages-two-tool-uses-without-input"),
    "gemini": _recorded("gemini-text"),
    "bedrock": _recorded("bedrock-text-and-tool-use"),
}
#: The forms a stream is given in: its bytes, its text (not AWS's binary stream), its events.
RAW_FORMS = [
    pytest.param(name, as_type, id=f"{name}-{label}")
    for name in RAW_STREAMS
    for as_type, label in ((bytes, "bytes"), (str, "str"), (list, "events"))
    if not (name == "bedrock" and as_type is str)
]


@pytest.mark.parametrize(("name", "as_type"), RAW_FORMS)
def test_decode_stream_takes_the_raw_body_or_its_events(name, as_type):
    raw, reply = RAW_STREAMS[name]()
    wire = BY_NAME[name]
    forms: dict[type, bytes | str | list[Any]] = {
        bytes: raw,
        str: raw.decode(errors="replace"),
        list: wire.unframe(raw),
    }

    assert wire.codec.decode_stream(forms[as_type]) == reply


@pytest.mark.parametrize(("wire", "name"), ROUND_TRIPS)
def test_a_stream_read_back_from_its_wire_bytes_is_the_same_reply(wire, name):
    events = wire.encode_stream(completions(wire)[name], "resp_9")
    raw = encode_messages(events) if wire.name == "bedrock" else format_sse(events)

    assert wire.codec.decode_stream(wire.unframe(raw)) == wire.codec.decode_stream(events)


@pytest.mark.parametrize(("name", "events", "message"), MALFORMED_STREAMS)
def test_decode_stream_of_a_malformed_stream_is_a_codec_error_saying_where(name, events, message):
    with pytest.raises(CodecError, match=message):
        BY_NAME[name].codec.decode_stream(events)
