"""Unit tests of pytest_agentctx.traffic.codecs.openai_responses (POST /v1/responses).

Realistic bodies come from the compatibility corpus (``shared/corpus`` beside the checkout,
recorded against the real API by simonw/llm and pydantic-ai; gzip ``!!binary`` bodies are
read with the package's cassette loader). What the codec encodes is checked with the
current ``openai`` SDK's own models (``Response.model_validate`` and the stream event
union) and through the SDK itself, answered by :class:`FakeLLM`. What every codec does
alike (round trips, malformed JSON, streams) is checked in ``test_codec_contract.py``.
"""

from __future__ import annotations

import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import TypeAdapter

from pytest_agentctx.context.model import INVALID_ARGUMENTS_KEY, ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.doubles.fake_llm import FakeLLM
from pytest_agentctx.traffic.cassettes import Interaction, load_cassette
from pytest_agentctx.traffic.cassettes.body import body_bytes
from pytest_agentctx.traffic.codecs import openai_responses
from pytest_agentctx.traffic.codecs.base import Completion, Usage
from pytest_agentctx.traffic.codecs.sse import SSEEvent, parse_sse

CORPUS = Path(__file__).resolve().parents[4].parent / "shared" / "corpus"
_TLS = ssl.create_default_context()
STREAM_EVENTS: TypeAdapter[Any] = TypeAdapter(ResponseStreamEvent)

REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [],
    "encrypted_content": "gAAAAABp-encrypted",
}
PARIS = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris"})
LYON = ToolCall(id="call_2", name="get_weather", arguments={"city": "Lyon"})
NOW = ToolCall(id="call_3", name="get_time", arguments={})
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)

COMPLETIONS = {
    "text": Completion(content="Sunny in Paris, 21 °C ☀.", model="gpt-4.1"),
    "tool-call": Completion(tool_calls=(PARIS,), model="gpt-4.1"),
    "parallel-tool-calls": Completion(tool_calls=(PARIS, LYON, NOW), model="gpt-4.1"),
    "text-and-tool-call": Completion(content="Checking.", tool_calls=(PARIS,), model="gpt-4.1"),
    "reasoning-and-tool-call": Completion(
        tool_calls=(PARIS,), model="o4-mini", reasoning=(REASONING,)
    ),
    "reasoning-and-text": Completion(content="42.", model="o4-mini", reasoning=(REASONING,)),
    "with-usage": Completion(content="Hi.", model="gpt-4.1", usage=Usage(120, 9)),
    "empty-text": Completion(content="", model="gpt-4.1"),
}

CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You answer weather questions."},
    {"role": "user", "content": "Weather in Paris and Lyon?"},
    {
        "role": "assistant",
        "content": "Checking both.",
        "tool_calls": [PARIS.model_dump(), LYON.model_dump()],
        "reasoning": [REASONING],
    },
    {"role": "tool", "content": "18C", "tool_call_id": "call_1"},
    {"role": "tool", "content": "16C", "tool_call_id": "call_2"},
    {"role": "assistant", "content": "18C in Paris, 16C in Lyon."},
    {"role": "user", "content": "Thanks!"},
]


def corpus(name: str) -> list[Interaction]:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"the cassette corpus is not at {CORPUS} (shared/corpus beside the checkout)")
    return load_cassette(path)


def response_body(name: str, index: int) -> dict[str, Any]:
    body = corpus(name)[index].response_body
    assert body is not None
    data: dict[str, Any] = body["json"]
    return data


def request_body(name: str, index: int) -> dict[str, Any]:
    body = corpus(name)[index].request_body
    assert body is not None
    data: dict[str, Any] = body["json"]
    return data


def stream_bytes(name: str, index: int) -> bytes:
    return body_bytes(corpus(name)[index].response_body)


# -- encode_request / decode_request -------------------------------------------------


def test_encode_request_turns_the_conversation_into_input_items():
    body = openai_responses.encode_request(
        model="gpt-4.1", messages=CONVERSATION, tools=[WEATHER], max_tokens=300, temperature=0.2
    )

    assert body == {
        "model": "gpt-4.1",
        "instructions": "You answer weather questions.",
        "input": [
            {"role": "user", "content": "Weather in Paris and Lyon?"},
            REASONING,
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Checking both."}],
            },
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "get_weather",
                "arguments": '{"city":"Paris"}',
            },
            {
                "type": "function_call",
                "call_id": "call_2",
                "name": "get_weather",
                "arguments": '{"city":"Lyon"}',
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "18C"},
            {"type": "function_call_output", "call_id": "call_2", "output": "16C"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "18C in Paris, 16C in Lyon."}],
            },
            {"role": "user", "content": "Thanks!"},
        ],
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Current weather.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            }
        ],
        "max_output_tokens": 300,
        "temperature": 0.2,
    }


def test_a_reasoning_models_request_survives_decode_then_encode():
    # the 4th request of a reasoning model's tool loop: three reasoning items, each
    # followed by its function call and output
    recorded = request_body("llm__openai_responses_reasoning_tools_4_gzip.yaml", 3)
    decoded = openai_responses.decode_request(recorded)

    encoded: dict[str, Any] = openai_responses.encode_request(
        model="gpt-5.5", messages=decoded.messages
    )

    def normalised(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # llm sends the arguments as '{"key": "start"}'; the codec writes them compactly
        return [
            {**item, "arguments": json.loads(item["arguments"])} if "arguments" in item else item
            for item in items
        ]

    assert normalised(encoded["input"]) == normalised(recorded["input"])


def test_decode_request_joins_reasoning_and_calls_into_one_assistant_message():
    decoded = openai_responses.decode_request(
        request_body("llm__openai_responses_reasoning_tools_4_gzip.yaml", 1)
    )

    match decoded.messages:
        case [
            {"role": "user"},
            {
                "role": "assistant",
                "content": None,
                "reasoning": [{"type": "reasoning", "id": str(), "encrypted_content": str()}],
                "tool_calls": [
                    {
                        "id": "call_I670mAzR6AYszdoqaI96qg0k",
                        "name": "db_lookup",
                        "arguments": {"key": "start"},
                    }
                ],
            },
            {
                "role": "tool",
                "content": "Begin with the value 7.",
                "tool_call_id": "call_I670mAzR6AYszdoqaI96qg0k",
            },
        ]:
            pass
        case messages:
            pytest.fail(f"unexpected messages: {messages}")


def test_decode_request_of_a_pydantic_ai_tool_round_trip():
    decoded = openai_responses.decode_request(
        request_body("pydantic-ai__openai_responses_tool_call.yaml", 1)
    )

    assert (decoded.model, decoded.stream, decoded.messages) == (
        "gpt-4o",
        False,
        [
            {"role": "user", "content": "What is the capital of PotatoLand?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_YfwRsW8sUxDKipwyhWTzOXCA",
                        "name": "get_capital",
                        "arguments": {"country": "PotatoLand"},
                    }
                ],
            },
            {
                "role": "tool",
                "content": "Potato City",
                "tool_call_id": "call_YfwRsW8sUxDKipwyhWTzOXCA",
            },
        ],
    )


def test_decode_request_joins_a_result_answered_by_the_items_id_to_its_call():
    # The recorded round trip, from a client that echoes the reply's output item as it
    # came (id fc_..., call_id call_...) and answers it with the item's id.
    body = request_body("pydantic-ai__openai_responses_tool_call.yaml", 1)
    (item,) = response_body("pydantic-ai__openai_responses_tool_call.yaml", 0)["output"]
    body["input"][1:] = [
        item,
        {"type": "function_call_output", "call_id": item["id"], "output": "Potato City"},
    ]

    decoded = openai_responses.decode_request(body)

    assert [(m["role"], m.get("tool_call_id")) for m in decoded.messages] == [
        ("user", None),
        ("assistant", None),
        ("tool", "call_YfwRsW8sUxDKipwyhWTzOXCA"),
    ]


def test_system_messages_are_joined_into_the_instructions():
    body = openai_responses.encode_request(
        model="gpt-4.1",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "system", "content": "Answer in French."},
        ],
    )

    assert (body["instructions"], body["input"]) == (
        "Be brief.\n\nAnswer in French.",
        [{"role": "user", "content": "Hi"}],
    )


def test_a_tool_call_with_invalid_json_arguments_is_sent_as_the_model_wrote_it():
    call = {"id": "call_1", "name": "f", "arguments": {INVALID_ARGUMENTS_KEY: '{"a": '}}

    body = openai_responses.encode_request(
        model="gpt-4.1", messages=[{"role": "assistant", "content": None, "tool_calls": [call]}]
    )

    assert body["input"] == [
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": '{"a": '}
    ]


def test_decode_request_reads_a_string_input_as_one_user_message():
    decoded = openai_responses.decode_request(
        {"model": "gpt-4.1", "input": "Hello", "instructions": "Be brief.", "stream": True}
    )

    assert (decoded.messages, decoded.stream) == (
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello"}],
        True,
    )


def test_decode_request_reads_developer_messages_and_content_parts():
    decoded = openai_responses.decode_request(
        {
            "input": [
                {"type": "message", "role": "developer", "content": "Be brief."},
                {
                    "type": "message",
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "Weather "},
                        {"type": "input_image", "image_url": "https://example.com/a.png"},
                        {"type": "input_text", "text": "here?"},
                    ],
                },
            ]
        }
    )

    assert decoded.messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather "},
        {"role": "user", "content": "here?"},
    ]


# -- decode_response -------------------------------------------------------------------


def test_decode_response_of_a_recorded_tool_call():
    completion = openai_responses.decode_response(
        response_body("llm__openai_responses_tool_use_gzip.yaml", 0)
    )

    assert completion == Completion(
        content=None,
        tool_calls=(
            ToolCall(
                id="call_nJmCK7SJe3ajdYYplIbH0KgL",
                name="multiply",
                arguments={"a": 1231, "b": 2331},
            ),
        ),
        model="gpt-5.5-2026-04-23",
        usage=Usage(input_tokens=58, output_tokens=23),
        stop_reason="tool_calls",
        response_id="resp_05c01d5dceb461c50169fab1bb5ec08196b7e38f8207aae2dd",
    )


def test_decode_response_of_a_recorded_answer():
    completion = openai_responses.decode_response(
        response_body("llm__openai_responses_tool_use_gzip.yaml", 1)
    )

    assert (completion.content, completion.tool_calls, completion.stop_reason) == (
        "1231 * 2331 = 2,869,461",
        (),
        "completed",
    )


def test_decode_response_reads_the_call_id_not_the_item_id():
    completion = openai_responses.decode_response(
        response_body("pydantic-ai__openai_responses_tool_call.yaml", 0)
    )

    assert completion.tool_calls == (
        ToolCall(
            id="call_YfwRsW8sUxDKipwyhWTzOXCA",
            name="get_capital",
            arguments={"country": "PotatoLand"},
        ),
    )


def test_decode_response_keeps_reasoning_items_verbatim():
    body = response_body("llm__openai_responses_reasoning_tools_4_gzip.yaml", 0)

    completion = openai_responses.decode_response(body)

    assert completion.reasoning == (body["output"][0],)
    assert body["output"][0]["type"] == "reasoning"


def test_decode_response_reads_parallel_function_calls_in_order():
    completion = openai_responses.decode_response(
        response_body("llm__openai_responses_reasoning_tools_4_gzip.yaml", 3)
    )

    assert [call.arguments["key"] for call in completion.tool_calls] == [
        "begin",
        "value",
        "the value 7",
        "Begin with the value 7.",
        "start2",
    ]


def test_decode_response_of_an_incomplete_response():
    completion = openai_responses.decode_response(
        {
            "id": "resp_1",
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "output": [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "The answer is"}],
                }
            ],
        }
    )

    assert (completion.content, completion.stop_reason, completion.usage) == (
        "The answer is",
        "incomplete",
        None,
    )


def test_decode_response_reads_a_refusal_as_the_text():
    completion = openai_responses.decode_response(
        {
            "status": "completed",
            "output": [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "refusal", "refusal": "I can't help with that."}],
                }
            ],
        }
    )

    assert completion.content == "I can't help with that."


# -- encode_response -------------------------------------------------------------------


@pytest.mark.parametrize("name", list(COMPLETIONS))
def test_the_sdk_validates_what_encode_response_writes(name):
    completion = COMPLETIONS[name]

    response = Response.model_validate(
        openai_responses.encode_response(completion, response_id="resp_1", created=7)
    )

    assert (response.id, response.output_text, response.created_at) == (
        "resp_1",
        completion.content or "",
        7,
    )


def test_encode_response_of_a_recorded_reply_validates_in_the_sdk():
    recorded = openai_responses.decode_response(
        response_body("llm__openai_responses_reasoning_tools_4_gzip.yaml", 3)
    )

    response = Response.model_validate(
        openai_responses.encode_response(recorded, response_id="resp_1")
    )

    assert [item.type for item in response.output] == ["reasoning", *["function_call"] * 5]


# -- streams ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(COMPLETIONS))
def test_every_streamed_event_validates_in_the_sdk(name):
    events = openai_responses.encode_stream(COMPLETIONS[name], response_id="resp_1")

    invalid = []
    for event in events:
        try:
            STREAM_EVENTS.validate_json(event.data)
        except ValueError:
            invalid.append(event.event)
    assert invalid == []


def test_encode_stream_names_every_event_and_numbers_them_in_order():
    events = openai_responses.encode_stream(COMPLETIONS["text-and-tool-call"], response_id="resp_1")

    data = [event.json() for event in events]
    assert (
        [event.event for event in events] == [d["type"] for d in data],
        [d["sequence_number"] for d in data],
    ) == (True, list(range(len(events))))


def test_encode_stream_of_text_and_a_tool_call():
    events = openai_responses.encode_stream(COMPLETIONS["text-and-tool-call"], response_id="resp_1")

    assert [(event.event, event.json().get("delta")) for event in events if event.event] == [
        ("response.created", None),
        ("response.output_item.added", None),
        ("response.content_part.added", None),
        ("response.output_text.delta", "Checking"),
        ("response.output_text.delta", "."),
        ("response.output_text.done", None),
        ("response.content_part.done", None),
        ("response.output_item.done", None),
        ("response.output_item.added", None),
        ("response.function_call_arguments.delta", '{"'),
        ("response.function_call_arguments.delta", "city"),
        ("response.function_call_arguments.delta", '":"'),
        ("response.function_call_arguments.delta", "Paris"),
        ("response.function_call_arguments.delta", '"}'),
        ("response.function_call_arguments.done", None),
        ("response.output_item.done", None),
        ("response.completed", None),
    ]


@pytest.mark.parametrize(
    ("name", "index", "expected"),
    [
        pytest.param(
            "llm__openai_responses_tool_use_stream.yaml",
            0,
            Completion(
                tool_calls=(
                    ToolCall(
                        id="call_sVidsfFJ6zlzRpelrPkTPlpd",
                        name="multiply",
                        arguments={"a": 1231, "b": 2331},
                    ),
                ),
                model="gpt-5.5-2026-04-23",
                usage=Usage(58, 23),
                stop_reason="tool_calls",
                response_id="resp_00d64fa806f333310169fab1be69d081a08f8285661855594c",
            ),
            id="llm-tool-call",
        ),
        pytest.param(
            "llm__openai_responses_tool_use_stream.yaml",
            1,
            Completion(
                content="1231 \u00d7 2331 = **2,869,461**",
                model="gpt-5.5-2026-04-23",
                usage=Usage(94, 18),
                stop_reason="completed",
                response_id="resp_0dacb603de1c9e6b0169fab1c2314081a3b1df3cc5c09e0c60",
            ),
            id="llm-answer",
        ),
        pytest.param(
            "pydantic-ai__openai_responses_tool_stream.yaml",
            0,
            Completion(
                tool_calls=(
                    ToolCall(
                        id="call_kL0PCQV7M2WMoVX8V8OtYSAL",
                        name="get_capital",
                        arguments={"country": "France"},
                    ),
                ),
                model="gpt-4o-2024-08-06",
                usage=Usage(255, 16),
                stop_reason="tool_calls",
                response_id="resp_67e554a155508191900ee113293c4c830794405d35281ae2",
            ),
            id="pydantic-ai-tool-call",
        ),
        pytest.param(
            "pydantic-ai__openai_responses_tool_stream.yaml",
            1,
            Completion(
                content="The capital of France is Paris.",
                model="gpt-4o-2024-08-06",
                usage=Usage(278, 9),
                stop_reason="completed",
                response_id="resp_67e554a21aa88191b65876ac5e5bbe0406c52f0e511c76ed",
            ),
            id="pydantic-ai-answer",
        ),
    ],
)
def test_decode_stream_of_a_recorded_stream(name, index, expected):
    assert openai_responses.decode_stream(stream_bytes(name, index)) == expected


@pytest.mark.parametrize("index", [0, 1])
def test_a_recorded_stream_cut_before_it_completed_is_rebuilt_from_its_items(index):
    events = parse_sse(stream_bytes("llm__openai_responses_tool_use_stream.yaml", index))
    whole = openai_responses.decode_stream(events)

    cut = openai_responses.decode_stream(events[:-1])  # without response.completed

    assert (cut.content, cut.tool_calls, cut.stop_reason, cut.response_id) == (
        whole.content,
        whole.tool_calls,
        "incomplete",
        whole.response_id,
    )


def test_an_incomplete_response_event_is_decoded_as_incomplete():
    body = openai_responses.encode_response(COMPLETIONS["text"], response_id="resp_1")
    event = {"type": "response.incomplete", "response": {**body, "status": "incomplete"}}

    completion = openai_responses.decode_stream(
        [SSEEvent("response.incomplete", json.dumps(event))]
    )

    assert (completion.content, completion.stop_reason) == (
        "Sunny in Paris, 21 °C ☀.",
        "incomplete",
    )


# -- through the openai SDK ------------------------------------------------------------


@pytest.fixture
async def client() -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        api_key="sk-test", http_client=httpx2.AsyncClient(verify=_TLS)
    ) as sdk:
        yield sdk


async def test_the_sdk_parses_a_served_reply_with_a_function_call(client):
    with FakeLLM() as fake:
        fake.reply("Checking.", tool_calls=[("get_weather", {"city": "Paris"})])
        response = await client.responses.create(model="gpt-4.1", input="Weather in Paris?")

    match response.output:
        case [message, call] if (message.type, call.type) == ("message", "function_call"):
            assert (response.output_text, call.call_id, call.name, call.arguments) == (
                "Checking.",
                "call_1",
                "get_weather",
                '{"city":"Paris"}',
            )
        case output:
            pytest.fail(f"unexpected output: {output}")


async def test_the_sdk_streams_a_served_reply_event_by_event(client):
    with FakeLLM() as fake:
        fake.reply("Sunny, 21 °C.", tool_calls=[("get_weather", {"city": "Paris"})])
        stream = await client.responses.create(
            model="gpt-4.1", input="Weather in Paris?", stream=True
        )
        events = [event async for event in stream]

    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    arguments = "".join(
        e.delta for e in events if e.type == "response.function_call_arguments.delta"
    )
    completed = events[-1]
    assert (deltas, arguments, completed.type, completed.response.output_text) == (
        "Sunny, 21 °C.",
        '{"city":"Paris"}',
        "response.completed",
        "Sunny, 21 °C.",
    )


async def test_the_fake_serves_a_stream_that_decodes_to_its_plain_reply(client):
    with FakeLLM() as fake:
        fake.reply("Sunny.", tool_calls=[("get_weather", {"city": "Paris"})])
        fake.reply("Sunny.", tool_calls=[("get_weather", {"city": "Paris"})])
        plain = await client.responses.with_raw_response.create(model="gpt-4.1", input="Hi")
        async with client.responses.with_streaming_response.create(
            model="gpt-4.1", input="Hi", stream=True
        ) as streamed:
            raw = await streamed.read()

    plain_completion = openai_responses.decode_response(json.loads(plain.http_response.content))
    streamed_completion = openai_responses.decode_stream(raw)
    assert streamed_completion == Completion(
        content=plain_completion.content,
        tool_calls=(ToolCall(id="call_2", name="get_weather", arguments={"city": "Paris"}),),
        model=plain_completion.model,
        usage=plain_completion.usage,
        stop_reason=plain_completion.stop_reason,
        response_id="resp_2",
    )


def test_decode_response_keeps_a_web_search_call_as_a_server_tool():
    body = {
        "id": "resp_1",
        "status": "completed",
        "model": "gpt-5",
        "output": [
            {
                "id": "ws_1",
                "type": "web_search_call",
                "status": "completed",
                "action": {"type": "search", "query": "weather: San Francisco, CA"},
            },
            {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Sunny.", "annotations": []}],
            },
        ],
    }

    completion = openai_responses.decode_response(body)

    assert completion.server_tools == (
        {
            "id": "ws_1",
            "name": "web_search",
            "input": {"type": "search", "query": "weather: San Francisco, CA"},
        },
    )
    assert (completion.content, completion.tool_calls) == ("Sunny.", ())
