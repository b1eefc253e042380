"""The Ollama native chat codec's own wire details (the contract every codec keeps is in
``test_codec_contract.py``): which paths it claims, the stream flag that defaults to true,
tool results joined to id-less calls by name and order, and the NDJSON stream."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentctx import Completion, ToolCall, Usage
from pytest_agentctx.traffic.codecs import codec_for_path, get_codec, ollama_chat


def _call(name: str, **arguments: object) -> dict[str, object]:
    return {"function": {"name": name, "arguments": arguments}}


@pytest.mark.parametrize("path", ["/api/chat", "/api/chat/", "/ollama/api/chat"])
def test_codec_for_path_finds_ollama_chat(path):
    assert codec_for_path(path) is ollama_chat


@pytest.mark.parametrize("path", ["/api/generate", "/api/chat/completions", "/api/embed"])
def test_codec_for_path_leaves_other_ollama_endpoints(path):
    codec = codec_for_path(path)

    assert codec is None or codec.name != "ollama_chat"


def test_get_codec_knows_ollama_chat():
    assert get_codec("ollama_chat") is ollama_chat


@pytest.mark.parametrize(("flag", "stream"), [({}, True), ({"stream": False}, False)])
def test_a_request_streams_unless_it_says_stream_false(flag, stream):
    body = {"model": "llama3.1", "messages": [], **flag}

    assert ollama_chat.decode_request(body).stream is stream


def test_tool_results_answer_the_calls_by_name_then_order():
    body = {
        "model": "llama3.1",
        "messages": [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    _call("get_weather", city="Paris"),
                    _call("get_time"),
                    _call("get_weather", city="Lyon"),
                ],
            },
            {"role": "tool", "tool_name": "get_time", "content": "noon"},
            {"role": "tool", "tool_name": "get_weather", "content": "sunny"},
            {"role": "tool", "content": "rainy"},
        ],
    }
    ids = [
        ollama_chat.synthetic_call_id("get_weather", {"city": "Paris"}, 0),
        ollama_chat.synthetic_call_id("get_time", {}, 1),
        ollama_chat.synthetic_call_id("get_weather", {"city": "Lyon"}, 2),
    ]

    messages = ollama_chat.decode_request(body).messages

    assert [m["tool_call_id"] for m in messages[1:]] == [ids[1], ids[0], ids[2]]


def test_a_reply_and_its_echo_give_a_call_the_same_synthetic_id():
    reply: dict[str, Any] = {
        "model": "llama3.1",
        "message": {"role": "assistant", "content": "", "tool_calls": [_call("f", x=1)]},
        "done": True,
        "done_reason": "stop",
    }
    echo = {"model": "llama3.1", "messages": [reply["message"]]}

    (call,) = ollama_chat.decode_response(reply).tool_calls
    (message,) = ollama_chat.decode_request(echo).messages

    assert message["tool_calls"][0]["id"] == call.id
    assert call.id.startswith(ollama_chat.SYNTHETIC_ID_PREFIX)


def test_ids_a_client_adds_to_the_echo_and_its_result_join_the_deterministic_id():
    # Ollama's reply has no id; the client's echo of it and the tool result carry its own
    body = {
        "model": "llama3.1",
        "messages": [
            {"role": "assistant", "tool_calls": [{"id": "lc-uuid-1", **_call("f", x=1)}]},
            {"role": "user", "content": "and?"},
            {"role": "tool", "tool_call_id": "lc-uuid-1", "content": "done"},
        ],
    }
    reply = {"message": {"role": "assistant", "tool_calls": [_call("f", x=1)]}, "done": True}

    messages = ollama_chat.decode_request(body).messages
    (call,) = ollama_chat.decode_response(reply).tool_calls

    assert (messages[0]["tool_calls"][0]["id"], messages[2]["tool_call_id"]) == (
        call.id,
        call.id,
    )


def test_synthetic_ids_are_never_sent():
    call = ToolCall(id=ollama_chat.synthetic_call_id("f", {}, 0), name="f", arguments={})

    body: dict[str, Any] = ollama_chat.encode_response(
        Completion(tool_calls=(call,)), response_id="r"
    )

    assert body["message"]["tool_calls"] == [{"function": {"name": "f", "arguments": {}}}]


def test_decode_stream_joins_tool_calls_sent_in_several_objects():
    chunks: list[dict[str, Any]] = [
        {"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": [_call("a")]}},
        {"model": "m", "message": {"role": "assistant", "content": "", "tool_calls": [_call("b")]}},
        {
            "model": "m",
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 9,
            "eval_count": 4,
        },
    ]

    completion = ollama_chat.decode_stream(ollama_chat.format_ndjson(chunks))

    assert [call.id for call in completion.tool_calls] == [
        ollama_chat.synthetic_call_id("a", {}, 0),
        ollama_chat.synthetic_call_id("b", {}, 1),
    ]
    assert completion.usage == Usage(9, 4)


def test_the_stream_is_one_json_object_per_line():
    raw = ollama_chat.format_ndjson(
        ollama_chat.encode_stream(Completion(content="Hi there", model="m"), response_id="r")
    )

    assert raw.decode().splitlines() == [
        '{"model":"m","created_at":"1970-01-01T00:00:00.000000Z","message":{"role":"assistant",'
        '"content":"Hi"},"done":false}',
        '{"model":"m","created_at":"1970-01-01T00:00:00.000000Z","message":{"role":"assistant",'
        '"content":" there"},"done":false}',
        '{"model":"m","created_at":"1970-01-01T00:00:00.000000Z","message":{"role":"assistant",'
        '"content":""},"done":true,"done_reason":"stop","total_duration":0,"load_duration":0,'
        '"prompt_eval_count":0,"prompt_eval_duration":0,"eval_count":0,"eval_duration":0}',
    ]
