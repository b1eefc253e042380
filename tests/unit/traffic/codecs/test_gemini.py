"""Unit tests of pytest_agentctx.traffic.codecs.gemini (``:generateContent``,
``:streamGenerateContent``).

The recorded bodies come from real calls: the compatibility corpus (pydantic-ai
``gemini_then_openai_chat_tools``, snake_case request fields) and pydantic-ai's Google test
cassettes (MIT: ``tests/models/cassettes/test_google/test_google_tool_call_id_wire_format
[gla-model-provided-tool-return]``, signatures shortened). The round trips go through the
real ``google-genai`` SDK over an ``httpx2.MockTransport``: no socket is opened. What every
codec does alike (round trips, malformed JSON, recorded streams) is checked in
``test_codec_contract.py``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from google import genai
from google.genai import types
from hypothesis import given, settings, strategies as st

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.codecs import codec_for_path, gemini, get_codec
from pytest_agentctx.traffic.codecs.base import Completion, DecodedRequest, Usage
from pytest_agentctx.traffic.codecs.sse import format_sse
from pytest_agentctx.traffic.errors import CodecError

WEATHER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
WEATHER_SPEC = ToolSpec("get_weather", "Current weather for a city.", WEATHER_SCHEMA)
MODEL = "gemini-2.5-flash"

# The corpus: pydantic-ai's first call (snake_case tools, as one object) and its reply.
CORPUS_REQUEST: dict[str, Any] = {
    "contents": [{"parts": [{"text": "What is the capital of France?"}], "role": "user"}],
    "tools": {
        "function_declarations": [
            {
                "description": "Get the capital of a country.",
                "name": "get_capital",
                "parameters": {
                    "properties": {"country": {"type": "string"}},
                    "required": ["country"],
                    "type": "object",
                },
            }
        ]
    },
}
CORPUS_RESPONSE: dict[str, Any] = {
    "candidates": [
        {
            "avgLogprobs": 3.921892493963242e-06,
            "content": {
                "parts": [{"functionCall": {"args": {"country": "France"}, "name": "get_capital"}}],
                "role": "model",
            },
            "finishReason": "STOP",
        }
    ],
    "modelVersion": "gemini-2.0-flash-exp",
    "usageMetadata": {
        "candidatesTokenCount": 5,
        "promptTokenCount": 23,
        "totalTokenCount": 28,
    },
}
# The corpus: the second call, answering the function call.
CORPUS_FOLLOW_UP: dict[str, Any] = {
    "contents": [
        {"parts": [{"text": "What is the capital of France?"}], "role": "user"},
        {
            "parts": [{"functionCall": {"args": {"country": "France"}, "name": "get_capital"}}],
            "role": "model",
        },
        {
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_capital",
                        "response": {"return_value": "Paris"},
                    }
                }
            ],
            "role": "user",
        },
    ],
}

# pydantic-ai, Gemini 2.5: a text answer that carries a thought signature.
SIGNED_TEXT_RESPONSE: dict[str, Any] = {
    "candidates": [
        {
            "content": {
                "parts": [{"text": "I'm sorry.", "thoughtSignature": "Cr0FAb4+9vvZySfAkIcf4jO0"}],
                "role": "model",
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ],
    "modelVersion": "gemini-2.5-flash",
    "responseId": "_qfgaevzGcz2juMP8pCmoAE",
    "usageMetadata": {
        "candidatesTokenCount": 32,
        "promptTokenCount": 57,
        "thoughtsTokenCount": 141,
        "totalTokenCount": 230,
    },
}

PARIS = ToolCall(
    id=gemini.synthetic_call_id("get_weather", {"city": "Paris"}, 0),
    name="get_weather",
    arguments={"city": "Paris"},
)
LYON = ToolCall(
    id=gemini.synthetic_call_id("get_weather", {"city": "Lyon"}, 1),
    name="get_weather",
    arguments={"city": "Lyon"},
)


def conversation() -> list[dict[str, Any]]:
    """A conversation in neutral form: system, user, two parallel calls and their results."""
    return [
        {"role": "system", "content": "You answer weather questions."},
        {"role": "user", "content": "Weather in Paris and Lyon?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [c.model_dump(mode="json") for c in (PARIS, LYON)],
        },
        {"role": "tool", "content": "Sunny", "tool_call_id": PARIS.id, "name": "get_weather"},
        {"role": "tool", "content": "Rainy", "tool_call_id": LYON.id, "name": "get_weather"},
    ]


# -- paths -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/v1beta/models/gemini-2.5-flash:generateContent",
        "/v1/models/gemini-2.5-flash:generateContent",
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-flash"
        ":generateContent",
        "/v1beta1/projects/p/locations/global/publishers/google/models/gemini-2.5-flash"
        ":streamGenerateContent",
        "/v1beta/tunedModels/my-model:generateContent",
    ],
)
def test_generate_content_paths_are_gemini_calls(path):
    assert codec_for_path(path) is gemini


@pytest.mark.parametrize(
    "path",
    [
        "/v1beta/models/gemini-2.5-flash:countTokens",
        "/v1beta/models/gemini-2.5-flash:embedContent",
        "/v1beta/models/gemini-2.5-flash",
        "/v1beta/models",
    ],
)
def test_other_gemini_endpoints_are_no_model_calls(path):
    assert codec_for_path(path) is None


def test_get_codec_knows_gemini():
    assert get_codec("gemini") is gemini


@pytest.mark.parametrize(
    ("path", "model", "stream"),
    [
        ("/v1beta/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash", False),
        ("/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", "gemini-2.5-flash", True),
        (
            "/v1/projects/p/locations/l/publishers/google/models/gemini-2.0-flash:generateContent",
            "gemini-2.0-flash",
            False,
        ),
    ],
)
def test_the_path_names_the_model_and_whether_it_streams(path, model, stream):
    request = gemini.request_for_path(path, gemini.decode_request({"contents": []}))

    assert (request.model, request.stream) == (model, stream)


# -- requests --------------------------------------------------------------------------


def test_encode_request_puts_the_system_prompt_in_system_instruction():
    body: dict[str, Any] = gemini.encode_request(model=MODEL, messages=conversation()[:2])

    assert body == {
        "model": MODEL,
        "contents": [{"role": "user", "parts": [{"text": "Weather in Paris and Lyon?"}]}],
        "systemInstruction": {"parts": [{"text": "You answer weather questions."}]},
    }


def test_encode_request_answers_parallel_calls_in_one_user_turn_without_synthetic_ids():
    body: dict[str, Any] = gemini.encode_request(model=MODEL, messages=conversation())

    assert body["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                {"functionCall": {"name": "get_weather", "args": {"city": "Lyon"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"result": "Sunny"}}},
                {"functionResponse": {"name": "get_weather", "response": {"result": "Rainy"}}},
            ],
        },
    ]


def test_encode_request_sends_ids_the_model_gave():
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "fc_1", "name": "get_weather", "arguments": {"city": "Paris"}}],
        },
        {"role": "tool", "content": "Sunny", "tool_call_id": "fc_1"},
    ]

    body: dict[str, Any] = gemini.encode_request(model=MODEL, messages=messages)

    assert body["contents"][1]["parts"][0]["functionCall"]["id"] == "fc_1"
    assert body["contents"][2]["parts"][0]["functionResponse"] == {
        "name": "get_weather",
        "response": {"result": "Sunny"},
        "id": "fc_1",
    }


def test_encode_request_sends_an_error_result_under_error():
    messages = [*conversation()[:4], {**conversation()[4], "is_error": True}]

    body: dict[str, Any] = gemini.encode_request(model=MODEL, messages=messages)

    assert body["contents"][2]["parts"][1]["functionResponse"]["response"] == {"error": "Rainy"}


def test_encode_request_declares_tools_with_their_json_schema_and_generation_config():
    body: dict[str, Any] = gemini.encode_request(
        model=MODEL,
        messages=conversation()[1:2],
        tools=[WEATHER_SPEC],
        max_tokens=256,
        temperature=0,
    )

    assert body["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Current weather for a city.",
                    "parametersJsonSchema": WEATHER_SCHEMA,
                }
            ]
        }
    ]
    assert body["generationConfig"] == {"temperature": 0, "maxOutputTokens": 256}


def test_encode_request_refuses_a_tool_result_it_cannot_name():
    messages = [{"role": "tool", "content": "Sunny", "tool_call_id": "unknown"}]

    with pytest.raises(CodecError, match=r"has no name.*give the tool message its name"):
        gemini.encode_request(model=MODEL, messages=messages)


def test_decode_request_reads_snake_case_fields_and_a_tools_object():
    decoded = gemini.decode_request(CORPUS_REQUEST)

    assert decoded.messages == [{"role": "user", "content": "What is the capital of France?"}]
    assert [tool["name"] for tool in decoded.tools] == ["get_capital"]
    parameters = decoded.tools[0]["parameters"]
    assert isinstance(parameters, dict)
    assert parameters["required"] == ["country"]


def test_decode_request_joins_a_function_response_to_the_call_it_answers():
    decoded = gemini.decode_request(CORPUS_FOLLOW_UP)

    call_id = gemini.decode_response(CORPUS_RESPONSE).tool_calls[0].id
    assert decoded.messages[1:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call_id, "name": "get_capital", "arguments": {"country": "France"}}
            ],
        },
        {"role": "tool", "content": "Paris", "tool_call_id": call_id, "name": "get_capital"},
    ]


def test_decode_request_joins_two_responses_of_one_tool_in_order():
    body: dict[str, Any] = gemini.encode_request(model=MODEL, messages=conversation())

    messages = gemini.decode_request(body).messages

    assert [(m["content"], m["tool_call_id"]) for m in messages[3:]] == [
        ("Sunny", PARIS.id),
        ("Rainy", LYON.id),
    ]


@pytest.mark.parametrize(
    ("response", "content", "is_error"),
    [
        ({"result": "Sunny"}, "Sunny", False),
        ({"output": "Sunny"}, "Sunny", False),
        ({"error": "city unknown"}, "city unknown", True),
        ({"temperature": 21, "sky": "clear"}, '{"sky": "clear", "temperature": 21}', False),
        ({"return_value": 42}, '{"return_value": 42}', False),
    ],
)
def test_decode_request_reads_a_function_response_as_the_tool_messages_text(
    response, content, is_error
):
    body = {
        "contents": [
            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": response}}]}
        ]
    }

    (message,) = gemini.decode_request(body).messages

    assert (message["content"], message.get("is_error", False)) == (content, is_error)


def test_decode_request_keeps_ids_the_client_sent():
    body = {
        "contents": [
            {
                "role": "model",
                "parts": [{"functionCall": {"id": "pyd_ai_1", "name": "f", "args": {}}}],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "pyd_ai_1", "name": "f", "response": {"a": 1}}}
                ],
            },
        ]
    }

    messages = gemini.decode_request(body).messages

    assert messages[0]["tool_calls"][0]["id"] == messages[1]["tool_call_id"] == "pyd_ai_1"


# -- responses -------------------------------------------------------------------------


def test_decode_response_reads_a_recorded_function_call():
    completion = gemini.decode_response(CORPUS_RESPONSE)

    assert completion == Completion(
        content=None,
        tool_calls=(
            ToolCall(
                id=gemini.synthetic_call_id("get_capital", {"country": "France"}, 0),
                name="get_capital",
                arguments={"country": "France"},
            ),
        ),
        model="gemini-2.0-flash-exp",
        usage=Usage(input_tokens=23, output_tokens=5),
        stop_reason="STOP",
    )


def test_decode_response_counts_thinking_tokens_as_output_and_keeps_the_signature():
    completion = gemini.decode_response(SIGNED_TEXT_RESPONSE)

    assert completion.content == "I'm sorry."
    assert completion.usage == Usage(input_tokens=57, output_tokens=32 + 141, reasoning_tokens=141)
    assert completion.response_id == "_qfgaevzGcz2juMP8pCmoAE"
    assert completion.reasoning == (
        {
            "type": "gemini_signature",
            "part": "text",
            "index": 0,
            "thoughtSignature": "Cr0FAb4+9vvZySfAkIcf4jO0",
        },
    )


def test_thought_summaries_are_reasoning_not_text():
    body = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {"text": "The user wants the weather.", "thought": True},
                        {"text": "Sunny."},
                    ],
                }
            }
        ]
    }

    completion = gemini.decode_response(body)

    assert completion.content == "Sunny."
    assert completion.reasoning == (
        {"type": "gemini_thought", "text": "The user wants the weather."},
    )


def test_signatures_and_thoughts_go_back_on_the_parts_that_carried_them():
    parts = [
        {"text": "Thinking about it.", "thought": True, "thoughtSignature": "c2ln"},
        {"text": "Let me check."},
        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
        {
            "functionCall": {"name": "get_weather", "args": {"city": "Lyon"}},
            "thoughtSignature": "eA==",
        },
    ]
    completion = gemini.decode_response({"candidates": [{"content": {"parts": parts}}]})
    message = {
        "role": "assistant",
        "content": completion.content,
        "tool_calls": [call.model_dump(mode="json") for call in completion.tool_calls],
        "reasoning": [dict(item) for item in completion.reasoning],
    }

    body: dict[str, Any] = gemini.encode_request(model=MODEL, messages=[message])

    assert body["contents"] == [{"role": "model", "parts": parts}]


def test_a_blocked_prompt_is_an_empty_reply_stopped_for_its_reason():
    body = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 9}}

    completion = gemini.decode_response(body)

    assert (completion.content, completion.tool_calls, completion.stop_reason) == (
        None,
        (),
        "SAFETY",
    )


def test_encode_response_leaves_synthetic_ids_out():
    completion = Completion(
        content="Checking.", tool_calls=(PARIS,), model=MODEL, usage=Usage(20, 9)
    )

    body = gemini.encode_response(completion, response_id="resp_1")

    assert body == {
        "candidates": [
            {
                "content": {
                    "parts": [
                        {"text": "Checking."},
                        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                    ],
                    "role": "model",
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 9, "totalTokenCount": 29},
        "modelVersion": MODEL,
        "responseId": "resp_1",
    }


# -- streaming ---------------------------------------------------------------------------


def test_encode_stream_sends_calls_whole_and_the_finish_reason_last():
    completion = Completion(
        content="Checking.", tool_calls=(PARIS,), model=MODEL, usage=Usage(20, 9)
    )

    chunks = [event.json() for event in gemini.encode_stream(completion, response_id="r")]

    assert [chunk["candidates"][0]["content"]["parts"] for chunk in chunks] == [
        [{"text": "Checking"}],
        [{"text": "."}],
        [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}],
    ]
    assert [chunk["candidates"][0].get("finishReason") for chunk in chunks] == [None, None, "STOP"]
    assert chunks[0]["usageMetadata"] == {"promptTokenCount": 20, "totalTokenCount": 20}
    assert chunks[-1]["usageMetadata"]["candidatesTokenCount"] == 9
    assert all(event.event is None for event in gemini.encode_stream(completion, response_id="r"))


# -- through the google-genai SDK ---------------------------------------------------------


def sdk_client(handler: Any) -> genai.Client:
    transport = httpx2.MockTransport(handler)
    options = types.HttpOptions(httpx_client=httpx2.Client(transport=transport))
    return genai.Client(api_key="test-key", http_options=options)


def test_the_sdk_reads_encode_response_as_the_reply():
    completion = Completion(
        content="Checking.", tool_calls=(PARIS,), model=MODEL, usage=Usage(20, 9)
    )
    body = gemini.encode_response(completion, response_id="resp_1")
    client = sdk_client(lambda request: httpx2.Response(200, json=body))

    response = client.models.generate_content(model=MODEL, contents="Weather in Paris?")

    assert response.text == "Checking."
    assert [(c.name, c.args, c.id) for c in response.function_calls or []] == [
        ("get_weather", {"city": "Paris"}, None)
    ]
    assert response.usage_metadata is not None
    assert response.usage_metadata.total_token_count == 29


def test_the_sdk_joins_encode_stream_into_the_same_reply():
    completion = Completion(content="Sunny in Paris.", tool_calls=(PARIS,), model=MODEL)
    stream = format_sse(gemini.encode_stream(completion, response_id="resp_1"))
    client = sdk_client(
        lambda request: httpx2.Response(
            200, content=stream, headers={"content-type": "text/event-stream"}
        )
    )

    chunks = list(client.models.generate_content_stream(model=MODEL, contents="Weather?"))

    assert "".join(chunk.text or "" for chunk in chunks) == "Sunny in Paris."
    assert chunks[-1].function_calls is not None
    assert chunks[-1].function_calls[0].args == {"city": "Paris"}
    assert chunks[-1].candidates is not None
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP


def test_what_the_sdk_sends_decodes_to_the_conversation():
    sent: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(200, json=gemini.encode_response(Completion("ok"), response_id="r"))

    client = sdk_client(handler)
    client.models.generate_content(
        model=MODEL,
        contents=[
            types.Content(role="user", parts=[types.Part(text="Weather in Paris?")]),
            types.Content(
                role="model",
                parts=[types.Part.from_function_call(name="get_weather", args={"city": "Paris"})],
            ),
            types.Content(
                role="user",
                parts=[
                    types.Part.from_function_response(
                        name="get_weather", response={"result": "Sunny"}
                    )
                ],
            ),
        ],
        config=types.GenerateContentConfig(system_instruction="Be brief."),
    )

    decoded = gemini.request_for_path(
        sent[0].url.path, gemini.decode_request(json.loads(sent[0].content))
    )
    assert decoded == DecodedRequest(
        model=MODEL,
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": PARIS.id, "name": PARIS.name, "arguments": PARIS.arguments}],
            },
            {"role": "tool", "content": "Sunny", "tool_call_id": PARIS.id, "name": "get_weather"},
        ],
    )


# -- streams as one JSON array (streamGenerateContent without alt=sse) ------------------

ARRAY_REPLY = Completion(
    content="Sunny in Paris, of course.",
    tool_calls=(
        ToolCall(
            id=gemini.synthetic_call_id("get_weather", {"city": "Paris"}, 0, 1),
            name="get_weather",
            arguments={"city": "Paris"},
        ),
    ),
    model=MODEL,
    usage=Usage(12, 7),
    stop_reason="STOP",
    response_id="r1",
)


@pytest.mark.parametrize(
    ("url", "array"),
    [
        ("/v1beta/models/m:streamGenerateContent", True),
        ("https://h/v1beta/models/m:streamGenerateContent?key=k", True),
        (
            "/v1/projects/p/locations/l/publishers/google/models/m:streamGenerateContent"
            "?%24alt=json%3Benum-encoding%3Dint",
            True,
        ),
        ("/v1beta/models/m:streamGenerateContent?alt=sse", False),
        ("/v1beta/models/m:generateContent", False),
    ],
)
def test_is_array_stream_tells_a_stream_without_alt_sse(url, array):
    assert gemini.is_array_stream(url) is array


def test_array_chunks_lay_the_stream_out_as_one_json_array():
    pieces = gemini.array_chunks(gemini.encode_stream(ARRAY_REPLY, response_id="r1"))

    raw = b"".join(pieces)
    assert raw.startswith(b"[{")
    assert raw.endswith(b"\n]")
    assert all(piece.startswith(b"\n,\r\n{") for piece in pieces[1:])
    assert [json.dumps(c) for c in json.loads(raw)] == [
        json.dumps(json.loads(event.data))
        for event in gemini.encode_stream(ARRAY_REPLY, response_id="r1")
    ]


@pytest.mark.parametrize("form", ["bytes", "text", "parsed"])
def test_decode_stream_reads_the_json_array_as_the_events(form):
    events = gemini.encode_stream(ARRAY_REPLY, response_id="r1")
    raw = b"".join(gemini.array_chunks(events))
    given: Any = {"bytes": raw, "text": raw.decode(), "parsed": json.loads(raw)}[form]

    assert gemini.decode_stream(given, turn=1) == gemini.decode_stream(events, turn=1)
    assert gemini.decode_stream(given, turn=1) == ARRAY_REPLY


def test_decode_stream_keeps_the_chunks_of_an_array_cut_short():
    raw = b"".join(gemini.array_chunks(gemini.encode_stream(ARRAY_REPLY, response_id="r1")))

    completion = gemini.decode_stream(raw[: raw.index(b"\n,\r\n", 10) + 20])

    assert completion.content == "Sunny"
    assert completion.stop_reason is None


def test_decode_stream_raises_for_an_error_in_the_array():
    with pytest.raises(CodecError, match=r"reports an error.*overloaded"):
        gemini.decode_stream('[{"error": {"code": 503, "message": "overloaded"}}]')


def test_a_finish_reason_sent_as_its_number_is_read_by_name():
    body = {"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": 2}]}

    assert gemini.decode_response(body).stop_reason == "MAX_TOKENS"


# -- synthetic ids: the turn counts ------------------------------------------------------


def test_identical_calls_of_two_turns_get_distinct_synthetic_ids():
    first = gemini.synthetic_call_id("get_weather", {"city": "Paris"}, 0, 0)
    later = gemini.synthetic_call_id("get_weather", {"city": "Paris"}, 0, 1)

    assert first != later
    assert first == gemini.synthetic_call_id("get_weather", {"city": "Paris"}, 0)


def test_a_reply_and_its_echo_get_the_same_id_in_any_turn():
    call = {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}
    reply = {"candidates": [{"content": {"role": "model", "parts": [call]}}]}
    earlier = [
        {"role": "user", "parts": [{"text": "Weather?"}]},
        {"role": "model", "parts": [call]},
        {"role": "user", "parts": [{"functionResponse": {"name": "get_weather", "response": {}}}]},
    ]
    echo = [*earlier, {"role": "model", "parts": [call]}]

    from_reply = gemini.decode_response(reply, turn=gemini.model_turns(earlier)).tool_calls[0]
    whole = gemini.decode_request({"contents": echo}).messages
    sliced = gemini.decode_request({"contents": echo[3:]}, first_turn=1).messages

    assert whole[-1]["tool_calls"][0]["id"] == from_reply.id
    assert sliced[-1]["tool_calls"][0]["id"] == from_reply.id
    assert whole[1]["tool_calls"][0]["id"] != from_reply.id


def test_a_function_response_with_an_id_only_the_client_knows_answers_the_bare_call():
    contents = [
        {"role": "model", "parts": [{"functionCall": {"name": "get_weather", "args": {}}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "get_weather", "id": "c-1", "response": {}}}],
        },
    ]

    call, result = gemini.decode_request({"contents": contents}).messages

    assert result["tool_call_id"] == call["tool_calls"][0]["id"]


_ARGUMENTS = st.dictionaries(
    st.sampled_from(["city", "n", "ok"]),
    st.one_of(st.integers(), st.booleans(), st.none(), st.text(max_size=6)),
    max_size=3,
)


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(max_size=30),
    calls=st.lists(st.tuples(st.sampled_from(["get_weather", "book"]), _ARGUMENTS), max_size=3),
    turn=st.integers(0, 4),
    cut=st.floats(0, 1),
)
def test_an_array_stream_reads_as_its_events_and_a_cut_one_as_what_arrived(text, calls, turn, cut):
    completion = Completion(
        content=text or None,
        tool_calls=tuple(
            ToolCall(
                id=gemini.synthetic_call_id(name, arguments, index, turn),
                name=name,
                arguments=arguments,
            )
            for index, (name, arguments) in enumerate(calls)
        ),
        model=MODEL,
        usage=Usage(3, 4),
        response_id="r",
    )
    events = gemini.encode_stream(completion, response_id="r")
    raw = b"".join(gemini.array_chunks(events)).decode()

    assert gemini.decode_stream(raw, turn=turn) == gemini.decode_stream(events, turn=turn)
    cut_short = gemini.decode_stream(raw[: int(len(raw) * cut)], turn=turn)
    assert all(call in completion.tool_calls for call in cut_short.tool_calls)
    assert (completion.content or "").startswith(cut_short.content or "")
