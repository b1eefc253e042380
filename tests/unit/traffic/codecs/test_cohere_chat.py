"""The Cohere v2 chat codec's own wire details (the contract every codec keeps is in
``test_codec_contract.py``): which paths it claims, tool plans, document tool results,
usage counts and the stream's events."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_agentctx import Usage
from pytest_agentctx.traffic.codecs import codec_for_path, cohere_chat, get_codec
from pytest_agentctx.traffic.codecs.sse import SSEEvent


@pytest.mark.parametrize(
    "path", ["/v2/chat", "/v2/chat/", "/v2/chat?x=1", "/cohere/v2/chat", "/models/v2/chat"]
)
def test_codec_for_path_finds_cohere_v2_chat(path):
    assert codec_for_path(path) is cohere_chat


@pytest.mark.parametrize("path", ["/v1/chat", "/v2/chat/completions", "/v2/embed", "/v2/rerank"])
def test_codec_for_path_leaves_other_cohere_endpoints(path):
    codec = codec_for_path(path)

    assert codec is None or codec.name != "cohere_chat"


def test_get_codec_knows_cohere_chat():
    assert get_codec("cohere_chat") is cohere_chat


def test_a_tool_result_of_documents_reads_as_their_json():
    body = {
        "model": "command-a-03-2025",
        "messages": [
            {
                "role": "tool",
                "tool_call_id": "web_search_1",
                "content": [
                    {"type": "document", "document": {"data": {"output": "60"}}},
                    {"type": "text", "text": "and more"},
                ],
            }
        ],
    }

    (message,) = cohere_chat.decode_request(body).messages

    assert message == {
        "role": "tool",
        "content": '{"output": "60"}\nand more',
        "tool_call_id": "web_search_1",
    }


def test_the_echo_of_a_tool_plan_reads_as_the_reply_it_echoes():
    reply: dict[str, Any] = {
        "id": "r1",
        "message": {
            "role": "assistant",
            "tool_plan": "I will search.",
            "tool_calls": [
                {
                    "id": "s_1",
                    "type": "function",
                    "function": {"name": "search", "arguments": '{"q":"x"}'},
                }
            ],
        },
        "finish_reason": "TOOL_CALL",
    }
    echo = {"model": "command-r", "messages": [dict(reply["message"])]}

    completion = cohere_chat.decode_response(reply)
    (message,) = cohere_chat.decode_request(echo).messages

    assert (
        (message["content"], message["tool_calls"][0]["id"])
        == (
            completion.content,
            completion.tool_calls[0].id,
        )
        == ("I will search.", "s_1")
    )


def test_usage_is_the_token_count_and_billed_units_when_there_is_none():
    tokens = {"billed_units": {"input_tokens": 23, "output_tokens": 41}}
    both = {**tokens, "tokens": {"input_tokens": 906, "output_tokens": 77}}
    reply = {"id": "r", "message": {"role": "assistant", "content": []}}

    assert [
        cohere_chat.decode_response({**reply, "usage": usage}).usage for usage in (both, tokens)
    ] == [Usage(906, 77), Usage(23, 41)]


def test_a_reply_of_text_blocks_and_citations_reads_as_the_text():
    reply = {
        "id": "r",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "Chelsea won."}],
            "citations": [{"start": 0, "end": 7, "text": "Chelsea", "sources": []}],
        },
        "finish_reason": "COMPLETE",
    }

    assert cohere_chat.decode_response(reply).content == "Chelsea won."


def test_decode_stream_ignores_citation_and_debug_events():
    events = [
        SSEEvent("message-start", '{"id":"m1","type":"message-start","delta":{"message":{}}}'),
        SSEEvent(
            "content-delta",
            '{"type":"content-delta","index":0,"delta":{"message":{"content":{"text":"Hi"}}}}',
        ),
        SSEEvent("citation-start", '{"type":"citation-start","index":0,"delta":{}}'),
        SSEEvent("debug", '{"type":"debug","prompt":"..."}'),
        SSEEvent("message-end", '{"type":"message-end","delta":{"finish_reason":"COMPLETE"}}'),
    ]

    completion = cohere_chat.decode_stream(events)

    assert (completion.content, completion.stop_reason, completion.response_id) == (
        "Hi",
        "COMPLETE",
        "m1",
    )


def test_encode_stream_names_each_event_by_its_type():
    events = cohere_chat.encode_stream(
        cohere_chat.decode_response(
            {
                "id": "r",
                "message": {"role": "assistant", "content": [{"type": "text", "text": "A"}]},
            }
        ),
        response_id="r",
    )

    assert [event.event for event in events] == [
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "message-end",
        None,
    ]
